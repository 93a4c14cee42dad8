#pragma once
// Var: a Tensor value on the tape. A Var is a cheap handle (one shared_ptr): copies share the
// value, the gradient and the node, like a torch.Tensor. Leaves (made by the constructor) hold a
// gradient; results of ops hold the Node that computes their inputs' gradients.
//
//   Var w(Tensor::randn({3, 2}, gen, DType::F64), /*requires_grad=*/true);
//   Var loss = sum(relu(matmul(x, w)));
//   loss.backward();                      // w.grad() now holds d loss / d w
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl::autodiff {

class Node;

/// The shared state behind a Var. Internal: use Var's methods.
struct VarImpl {
  Tensor value;
  Tensor grad;                    // leaves only: the accumulated gradient (undefined: none yet)
  std::shared_ptr<Node> grad_fn;  // results of ops only: the node that produced this value
  bool requires_grad = false;
};

class Var;

/// Options of Var::backward.
struct BackwardOptions {
  /// d root / d root; may be undefined for a one-element root (then 1). Same shape as the root.
  Tensor seed;
  /// Keep the graph (its saved tensors) so that backward can run through it again.
  bool retain_graph = false;
  /// The gradient-ready hook of this backward: called once for every leaf requiring grad that the
  /// backward reaches, as soon as its gradient is final in this backward (every contribution of
  /// this backward accumulated into grad(); a leaf used several times, a tied parameter, after
  /// its last use), on the thread running backward, before backward returns. Leaves the backward
  /// does not reach never fire. The order is the same on every rank that records the same graph
  /// in the same order (autodiff/engine.h, "Gradient-ready hook"). May start communication (an
  /// all_reduce_async of the gradient); must not run a backward itself.
  std::function<void(const Var& leaf)> grad_ready;
};

/// A value on the tape. See the file comment.
class Var {
 public:
  /// An undefined Var (holds nothing); defined() is false.
  Var() = default;
  /// A constant leaf holding `value` (requires_grad false, never on the tape). Implicit, so a
  /// Tensor passes wherever a Var is expected, as data in libtorch: `autodiff::matmul(x,
  /// w_tensor)`, `model.forward(tensor)`, `mse_loss(pred, target_tensor)`. An all-Tensor call of an
  /// op that has a Tensor form (`matmul(a, b)`, `a + b`) still picks the Tensor op: that one
  /// matches exactly, this conversion is user-defined. ValueError for an undefined tensor.
  Var(Tensor value);  // NOLINT(google-explicit-constructor)
  /// A leaf holding `value`. With requires_grad, backward() accumulates its gradient in grad().
  explicit Var(Tensor value, bool requires_grad);

  bool defined() const { return impl_ != nullptr; }
  /// The value (shares storage with the Var; do not modify it while a graph that saved it lives).
  const Tensor& value() const;
  /// The accumulated gradient of a leaf; undefined when none has arrived (or after zero_grad).
  /// Results of ops (non-leaves) never hold one.
  const Tensor& grad() const;
  /// Whether gradients flow to or through this value.
  bool requires_grad() const;
  /// True for values made by the constructor (or detach()), false for results of recorded ops.
  bool is_leaf() const;
  /// The node that produced this value; null for leaves.
  const std::shared_ptr<Node>& grad_fn() const;

  /// Runs the reverse pass from this value (see autodiff/engine.h). A one-element value is seeded
  /// with 1; any other needs options.seed of its exact shape. Frees the graph unless
  /// options.retain_graph. Throws AutodiffError when this value needs no gradient or the graph was
  /// freed, ShapeError for a missing or mis-shaped seed.
  void backward(const BackwardOptions& options = {}) const;
  /// backward({seed, retain_graph}).
  void backward(const Tensor& seed, bool retain_graph = false) const;

  /// A new leaf sharing this value's storage, cut from the tape (requires_grad false).
  Var detach() const;
  /// Forgets the gradient (set_to_none, the default), or, when set_to_none is false and one
  /// exists, zeroes it in place like torch's grad.zero_(): its storage and layout stay, and a
  /// tensor given to set_grad is zeroed too.
  void zero_grad(bool set_to_none = true);
  /// Replaces a leaf's gradient (undefined clears it); shape and dtype must match the value.
  void set_grad(const Tensor& grad);
  /// Switches gradient tracking of a leaf on or off (AutodiffError for a non-leaf).
  void set_requires_grad(bool requires_grad);
  /// Replaces a leaf's value (a parameter update); shape, dtype and device must match. Every copy
  /// of this Var sees the new value. Graphs recorded earlier keep the tensors they saved.
  void set_value(const Tensor& value);

  // Metadata of the value.
  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }
  std::int64_t dim() const { return value().dim(); }
  std::int64_t numel() const { return value().numel(); }
  std::int64_t size(std::int64_t d) const { return value().size(d); }

  // ---- op methods ---------------------------------------------------------------------------
  // The free functions of autodiff/ops/*.h as methods (libtorch's spelling): x.sum(1) is
  // sum(x, 1), x.matmul(w) is matmul(x, w). They record exactly what the free function records
  // (the same node, the same backward) and are defined in autodiff/var_methods.cpp, so this header
  // includes no op header. A Tensor argument is a constant (the implicit Var(Tensor)).
  Var sum() const;
  Var sum(std::int64_t dim, bool keepdim = false) const;
  Var sum(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  Var mean() const;
  Var mean(std::int64_t dim, bool keepdim = false) const;
  Var mean(const std::vector<std::int64_t>& dims, bool keepdim = false) const;
  Var prod() const;
  Var prod(std::int64_t dim, bool keepdim = false) const;
  /// The values only; the indices are argmax(dim) (torch's max(dim) returns both).
  Var max() const;
  Var max(std::int64_t dim, bool keepdim = false) const;
  Var min() const;
  Var min(std::int64_t dim, bool keepdim = false) const;
  /// Not differentiable: a Tensor.
  Tensor argmax(std::int64_t dim, bool keepdim = false) const;
  Var var(const std::vector<std::int64_t>& dims, std::int64_t correction = 1,
          bool keepdim = false) const;
  Var var(std::int64_t dim, std::int64_t correction = 1, bool keepdim = false) const;
  Var softmax(std::int64_t dim) const;
  Var log_softmax(std::int64_t dim) const;

  Var neg() const;
  Var exp() const;
  Var log() const;
  Var sqrt() const;
  Var abs() const;
  Var tanh() const;
  Var sigmoid() const;
  Var relu() const;
  Var gelu() const;
  Var add(const Var& other) const;
  Var add(Scalar other) const;
  Var sub(const Var& other) const;
  Var sub(Scalar other) const;
  Var mul(const Var& other) const;
  Var mul(Scalar other) const;
  Var div(const Var& other) const;
  Var div(Scalar other) const;
  Var pow(const Var& exponent) const;
  Var pow(Scalar exponent) const;
  Var maximum(const Var& other) const;
  Var minimum(const Var& other) const;
  /// The value converted to `dtype` (floating); the gradient converts back.
  Var to(DType dtype) const;

  Var matmul(const Var& other) const;
  /// transpose(0, 1) of a 2-d Var; a 0-d or 1-d one as it is (torch's t()).
  Var t() const;
  Var reshape(const Shape& shape) const;
  Var transpose(std::int64_t d0, std::int64_t d1) const;
  Var permute(const std::vector<std::int64_t>& dims) const;
  Var narrow(std::int64_t d, std::int64_t start, std::int64_t length) const;
  /// Element `i` of dim `d`, dropping the dim (autodiff::select).
  Var select(std::int64_t d, std::int64_t i) const;
  Var expand(const Shape& shape) const;
  Var squeeze(std::int64_t d) const;
  Var unsqueeze(std::int64_t d) const;
  Var flatten(std::int64_t start = 0, std::int64_t end = -1) const;
  Var contiguous() const;
  Var index_select(std::int64_t dim, const Tensor& index) const;
  Var gather(std::int64_t dim, const Tensor& index) const;
  std::vector<Var> split(std::int64_t split_size, std::int64_t dim = 0) const;
  std::vector<Var> split(const std::vector<std::int64_t>& sizes, std::int64_t dim = 0) const;
  std::vector<Var> chunk(std::int64_t chunks, std::int64_t dim = 0) const;
  /// x.index({Slice(0, 2), 3}) as Tensor::index, on the tape (autodiff::index): the gradient
  /// lands in zeros of this shape at the indexed elements.
  Var index(std::initializer_list<indexing::TensorIndex> indices) const;
  Var index(std::span<const indexing::TensorIndex> indices) const;

  /// Whether two Vars are the same handle (share one value and gradient).
  bool same(const Var& other) const { return impl_ == other.impl_; }
  /// Internal: the shared state.
  const std::shared_ptr<VarImpl>& impl() const { return impl_; }
  /// Internal: wraps existing shared state.
  explicit Var(std::shared_ptr<VarImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<VarImpl> impl_;
};

}  // namespace ruccl::autodiff
