#pragma once
// Node: one recorded op on the tape, and the public API for adding a differentiable op.
//
// A differentiable op computes its value with Tensor ops, then records a backward rule beside it:
//
//   Var mul(const Var& a, const Var& b) {
//     Tensor out = ruccl::mul(a.value(), b.value());
//     return make_var(std::move(out), "mul", {a, b},
//                     [a = a.value(), b = b.value()](const Tensor& g, GradInputs& grads) {
//                       if (grads.needed(0)) grads[0] = sum_to(ruccl::mul(g, b), a.shape());
//                       if (grads.needed(1)) grads[1] = sum_to(ruccl::mul(g, a), b.shape());
//                     });
//   }
//
// The rule receives d root / d output (same shape and dtype as the output) and fills one slot per
// input with d root / d input, exactly that input's shape and dtype (the engine checks this and
// throws AutodiffError naming the op otherwise). An empty slot means "no gradient" (zero). What the
// lambda captures is what backward saves: capture only what the rule needs; the engine destroys
// the rule (releasing the saved tensors) right after running it unless the graph is retained. A
// rule may throw; the exception leaves backward() and the tape stays consistent.
//
// When grad mode is off (NoGradGuard) or no input requires grad, make_var returns a constant and
// records nothing. Ops that are costly to prepare for backward may test should_record({a, b})
// first.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "autodiff/grad_mode.h"
#include "autodiff/var.h"
#include "tensor/core/tensor.h"

namespace ruccl::autodiff {

/// A reference to an input Var, so that `{a, b}` lists inputs without copying handles.
using VarRef = std::reference_wrapper<const Var>;

/// Where an input's gradient goes: the node that produced it, or the leaf that accumulates it, or
/// neither (the input needs no gradient).
struct Edge {
  std::shared_ptr<Node> node;
  std::shared_ptr<VarImpl> leaf;
  Shape shape;  // the input's shape and dtype, to check what a rule returns
  DType dtype = DType::F32;
  /// Whether a gradient for this input is wanted.
  bool needed() const { return node != nullptr || leaf != nullptr; }
};

/// The gradient slots a backward rule fills, one per input, in input order.
class GradInputs {
 public:
  GradInputs(std::span<Tensor> slots, std::span<const Edge> edges) : slots_(slots), edges_(edges) {}
  std::size_t size() const { return slots_.size(); }
  /// Whether input `i` wants a gradient; a rule may skip the work for the others.
  bool needed(std::size_t i) const { return edges_[i].needed(); }
  /// The slot of input `i`: assign d root / d input_i (its exact shape and dtype).
  Tensor& operator[](std::size_t i) { return slots_[i]; }
  /// Input `i`'s shape (for sum_to and friends, without saving the input).
  const Shape& input_shape(std::size_t i) const { return edges_[i].shape; }
  /// Input `i`'s dtype.
  DType input_dtype(std::size_t i) const { return edges_[i].dtype; }

 private:
  std::span<Tensor> slots_;
  std::span<const Edge> edges_;
};

/// One recorded op. Subclass it (apply + release_saved) for ops that do not fit make_var's
/// lambda, and record it with record(); see the file comment for the contract.
class Node {
 public:
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// The op's name, for error messages ("matmul", "all_reduce_sum").
  const char* name() const { return name_; }
  /// Creation order on the creating thread (see autodiff/engine.h for why it matters).
  std::uint64_t sequence_nr() const { return seq_; }
  /// Number of inputs (edges).
  std::size_t num_inputs() const { return num_edges_; }
  /// The edges to the inputs, in input order.
  std::span<const Edge> edges() const { return {edge_data(), num_edges_}; }
  /// True once a backward without retain_graph ran through this node and freed it.
  bool released() const { return released_; }

  /// Fills `grads` (one slot per input) from d root / d output.
  virtual void apply(const Tensor& grad_output, GradInputs& grads) = 0;
  /// Drops everything saved for backward; called once after apply unless the graph is retained.
  virtual void release_saved() = 0;

 protected:
  explicit Node(const char* name) : name_(name) {}

 private:
  friend struct NodeAccess;
  static constexpr std::size_t kInlineEdges = 2;

  const Edge* edge_data() const {
    return num_edges_ <= kInlineEdges ? inline_edges_.data() : more_edges_.data();
  }

  const char* name_;
  std::uint64_t seq_ = 0;
  std::size_t num_edges_ = 0;
  std::array<Edge, kInlineEdges> inline_edges_;
  std::vector<Edge> more_edges_;  // used instead of inline_edges_ beyond kInlineEdges inputs
  Tensor pending_grad_;           // engine: gradient summed so far during one backward
  bool released_ = false;
};

/// Whether recording is on and any input requires grad: the condition for make_var to record.
bool should_record(std::span<const VarRef> inputs);
/// should_record for a braced list: should_record({a, b}).
template <std::size_t N>
bool should_record(const VarRef (&inputs)[N]) {
  return should_record(std::span<const VarRef>(inputs, N));
}
/// should_record for a run-time list.
bool should_record_list(const std::vector<Var>& inputs);

/// Makes `value` the output of `node` with `inputs`, or a constant when should_record is false
/// (then `node` is dropped). Gives the node its sequence number and edges.
Var record(Tensor value, std::shared_ptr<Node> node, std::span<const VarRef> inputs);
/// record for a run-time list of inputs.
Var record_list(Tensor value, std::shared_ptr<Node> node, const std::vector<Var>& inputs);

namespace detail {
/// A Node whose backward is a callable `void(const Tensor& grad_output, GradInputs& grads)`.
template <typename Rule>
class RuleNode final : public Node {
 public:
  template <typename R>
  RuleNode(const char* name, R&& rule) : Node(name), rule_(std::forward<R>(rule)) {}
  void apply(const Tensor& grad_output, GradInputs& grads) override {
    (*rule_)(grad_output, grads);
  }
  void release_saved() override { rule_.reset(); }

 private:
  std::optional<Rule> rule_;
};
}  // namespace detail

/// Records a differentiable op: `value` computed by the forward, `rule` its backward (see the file
/// comment). `inputs` is a braced list of Vars: make_var(out, "mul", {a, b}, rule).
template <std::size_t N, typename Rule>
Var make_var(Tensor value, const char* name, const VarRef (&inputs)[N], Rule&& rule) {
  std::span<const VarRef> list(inputs, N);
  if (!should_record(list)) return Var(std::move(value));
  return record(
      std::move(value),
      std::make_shared<detail::RuleNode<std::decay_t<Rule>>>(name, std::forward<Rule>(rule)), list);
}

/// make_var for a run-time number of inputs (cat, stack).
template <typename Rule>
Var make_var_list(Tensor value, const char* name, const std::vector<Var>& inputs, Rule&& rule) {
  if (!should_record_list(inputs)) return Var(std::move(value));
  return record_list(
      std::move(value),
      std::make_shared<detail::RuleNode<std::decay_t<Rule>>>(name, std::forward<Rule>(rule)),
      inputs);
}

}  // namespace ruccl::autodiff
