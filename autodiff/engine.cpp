// The tape's engine: recording nodes (record) and the reverse pass (backward). See engine.h for
// the ordering and threading rules.
#include "autodiff/engine.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autodiff/error.h"
#include "autodiff/grad_mode.h"
#include "autodiff/node.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::autodiff {

/// The engine's access to Node's bookkeeping.
struct NodeAccess {
  static Edge* edges(Node& n) {
    return n.num_edges_ <= Node::kInlineEdges ? n.inline_edges_.data() : n.more_edges_.data();
  }
  static void set_num_edges(Node& n, std::size_t count) {
    n.num_edges_ = count;
    if (count > Node::kInlineEdges) n.more_edges_.resize(count);
  }
  static std::uint64_t& seq(Node& n) { return n.seq_; }
  static Tensor& pending(Node& n) { return n.pending_grad_; }
  static bool& released(Node& n) { return n.released_; }
};

namespace {

// Per-thread creation counter (see engine.h): no shared state on the recording path.
thread_local std::uint64_t last_sequence_nr = 0;

template <typename Inputs, typename Get>
bool any_requires_grad(const Inputs& inputs, Get get) {
  if (!is_grad_enabled()) return false;
  for (const auto& in : inputs) {
    const Var& v = get(in);
    if (v.requires_grad()) return true;
  }
  return false;
}

template <typename Inputs, typename Get>
Var record_impl(Tensor value, std::shared_ptr<Node> node, const Inputs& inputs, Get get) {
  if (!any_requires_grad(inputs, get)) return Var(std::move(value));
  RUCCL_ASSERT(node != nullptr, "record: null node");
  Node& n = *node;
  NodeAccess::set_num_edges(n, inputs.size());
  Edge* edges = NodeAccess::edges(n);
  std::uint64_t after = last_sequence_nr;
  std::size_t i = 0;
  for (const auto& in : inputs) {
    const Var& v = get(in);
    RUCCL_CHECK(v.defined(), ValueError, n.name(),
                ": expected defined inputs, got an undefined Var");
    const VarImpl& impl = *v.impl();
    Edge& e = edges[i++];
    e.shape = impl.value.shape();
    e.dtype = impl.value.dtype();
    if (!impl.requires_grad) continue;
    if (impl.grad_fn) {
      e.node = impl.grad_fn;
      after = std::max(after, NodeAccess::seq(*impl.grad_fn));
    } else {
      e.leaf = v.impl();
    }
  }
  last_sequence_nr = after + 1;
  NodeAccess::seq(n) = last_sequence_nr;
  auto out = std::make_shared<VarImpl>();
  out->value = std::move(value);
  out->grad_fn = std::move(node);
  out->requires_grad = true;
  return Var(std::move(out));
}

const Var& deref(const VarRef& r) { return r.get(); }
const Var& same(const Var& v) { return v; }

// Whether t's elements tile one block of its storage exactly: no element reached twice and no
// gaps (PyTorch's is_non_overlapping_and_dense). True for any permutation of a contiguous tensor
// (transpose, permute); false for expand (stride 0), narrow and other strided slices (gaps).
bool non_overlapping_and_dense(const Tensor& t) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(t.dim()));
  for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = static_cast<std::int64_t>(d);
  std::stable_sort(dims.begin(), dims.end(),
                   [&](std::int64_t a, std::int64_t b) { return t.strides()[a] < t.strides()[b]; });
  std::int64_t expected = 1;
  for (std::int64_t d : dims) {
    if (t.shape()[d] == 1) continue;  // a size-1 dim's stride is never used
    if (t.strides()[d] != expected) return false;
    expected *= t.shape()[d];
  }
  return true;
}

// PyTorch's AccumulateGrad layout contract. A leaf whose value is non-contiguous but dense
// (transposed, permuted) stores its gradient with exactly the value's strides, so that an
// elementwise update of value by grad walks both in the same order; any other leaf (contiguous,
// or with overlaps or gaps) stores a contiguous gradient. An empty value needs no layout.
bool keeps_value_layout(const Tensor& value) {
  return value.numel() > 0 && !value.is_contiguous() && non_overlapping_and_dense(value);
}

// `g` made fit to be stored as a leaf's .grad: in the layout above, and not sharing storage with
// any other tensor (pass-through rules hand the same tensor to several inputs), so in-place
// updates of the stored gradient (optimizers) cannot corrupt anything else. Copies only when `g`
// does not already qualify.
Tensor stored_gradient(Tensor g, const Tensor& value) {
  if (keeps_value_layout(value)) {
    if (g.strides() == value.strides() && g.storage().use_count() == 1) return g;
    // value's strides span exactly numel elements from offset 0 (it is dense): allocate those
    // elements and view them with value's strides.
    Tensor out = Tensor::empty(Shape{value.numel()}, g.dtype(), g.device())
                     .as_strided(value.shape(), value.strides(), 0);
    out.copy_(g);
    return out;
  }
  if (!g.is_contiguous() || g.storage().use_count() > 1) return g.clone();
  return g;
}

void accumulate_leaf(VarImpl& leaf, Tensor g) {
  if (!leaf.requires_grad) return;  // frozen after the graph was recorded
  // Out of place: the stored gradient may be shared with the caller (set_grad).
  if (leaf.grad.defined()) g = ruccl::add(leaf.grad, g);
  leaf.grad = stored_gradient(std::move(g), leaf.value);
}

bool later(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
  return a->sequence_nr() < b->sequence_nr();  // max-heap on the sequence number
}

// For the gradient-ready hook: how many nodes reachable from `root` send each leaf a gradient
// (one per edge: a node that uses a leaf twice counts twice), and the leaves in the order a
// depth-first walk from the root meets them (deterministic: edges in input order). Frozen leaves
// are not counted.
struct LeafUses {
  std::unordered_map<VarImpl*, std::size_t> count;
  std::vector<std::shared_ptr<VarImpl>> order;
};

LeafUses leaf_uses(const std::shared_ptr<Node>& root) {
  LeafUses uses;
  std::unordered_set<Node*> seen{root.get()};
  std::vector<Node*> stack{root.get()};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    const Edge* edges = NodeAccess::edges(*node);
    for (std::size_t i = 0; i < node->num_inputs(); ++i) {
      const Edge& e = edges[i];
      if (e.node && seen.insert(e.node.get()).second) stack.push_back(e.node.get());
      if (!e.leaf || !e.leaf->requires_grad) continue;
      if (uses.count[e.leaf.get()]++ == 0) uses.order.push_back(e.leaf);
    }
  }
  return uses;
}

}  // namespace

bool should_record(std::span<const VarRef> inputs) { return any_requires_grad(inputs, deref); }
bool should_record_list(const std::vector<Var>& inputs) { return any_requires_grad(inputs, same); }

Var record(Tensor value, std::shared_ptr<Node> node, std::span<const VarRef> inputs) {
  return record_impl(std::move(value), std::move(node), inputs, deref);
}
Var record_list(Tensor value, std::shared_ptr<Node> node, const std::vector<Var>& inputs) {
  return record_impl(std::move(value), std::move(node), inputs, same);
}

void backward(const Var& root, const BackwardOptions& options) {
  RUCCL_CHECK(root.defined(), AutodiffError,
              "backward: expected a defined Var, got an undefined one");
  VarImpl& impl = *root.impl();
  RUCCL_CHECK(impl.requires_grad, AutodiffError,
              "backward: the value does not require grad (no input of the ops that made it "
              "requires grad, or it was computed under NoGradGuard)");
  Tensor seed = options.seed;
  if (!seed.defined()) {
    RUCCL_CHECK(impl.value.numel() == 1, ShapeError,
                "backward: a root that is not a single element needs an explicit seed; expected "
                "a seed of shape ",
                impl.value.shape(), ", got none");
    seed = Tensor::ones(impl.value.shape(), impl.value.dtype(), impl.value.device());
  } else {
    RUCCL_CHECK(seed.shape() == impl.value.shape(), ShapeError,
                "backward: expected a seed of the root's shape ", impl.value.shape(), ", got ",
                seed.shape());
    RUCCL_CHECK(is_floating(seed.dtype()), DTypeError, "backward: expected a floating seed, got ",
                seed.dtype());
    seed = seed.to(impl.value.dtype());
  }
  if (!impl.grad_fn) {  // a leaf: the gradient of itself
    accumulate_leaf(impl, std::move(seed));
    if (options.grad_ready) options.grad_ready(root);
    return;
  }
  LeafUses uses;
  if (options.grad_ready) uses = leaf_uses(impl.grad_fn);

  std::vector<std::shared_ptr<Node>> heap;
  std::vector<Tensor> slots;
  NodeAccess::pending(*impl.grad_fn) = std::move(seed);
  heap.push_back(impl.grad_fn);
  try {
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      std::shared_ptr<Node> node = std::move(heap.back());
      heap.pop_back();
      Tensor grad = std::move(NodeAccess::pending(*node));
      NodeAccess::pending(*node) = Tensor();
      RUCCL_CHECK(!node->released(), AutodiffError, "backward: the graph through '", node->name(),
                  "' was freed by an earlier backward(); pass retain_graph = true to that "
                  "backward to run through the graph again");
      const std::size_t n = node->num_inputs();
      Edge* edges = NodeAccess::edges(*node);
      slots.clear();
      slots.resize(n);
      GradInputs grads(slots, std::span<const Edge>(edges, n));
      node->apply(grad, grads);
      grad = Tensor();
      for (std::size_t i = 0; i < n; ++i) {
        Tensor& g = slots[i];
        const Edge& e = edges[i];
        if (!g.defined() || !e.needed()) continue;
        RUCCL_CHECK(g.shape() == e.shape && g.dtype() == e.dtype, AutodiffError, "backward of '",
                    node->name(), "': the gradient of input ", i, " should have shape ", e.shape,
                    " and dtype ", e.dtype, ", got shape ", g.shape(), " and dtype ", g.dtype());
        if (e.node) {
          Tensor& pending = NodeAccess::pending(*e.node);
          if (!pending.defined()) {
            pending = std::move(g);
            heap.push_back(e.node);
            std::push_heap(heap.begin(), heap.end(), later);
          } else {
            pending = ruccl::add(pending, g);
          }
        } else {
          accumulate_leaf(*e.leaf, std::move(g));
        }
      }
      slots.clear();
      for (std::size_t i = 0; options.grad_ready && i < n; ++i) {
        const std::shared_ptr<VarImpl>& leaf = edges[i].leaf;
        if (!leaf || !leaf->requires_grad || --uses.count[leaf.get()] > 0) continue;
        options.grad_ready(Var(leaf));  // this was the leaf's last use: its gradient is final
      }
      if (!options.retain_graph) {
        node->release_saved();
        for (std::size_t i = 0; i < n; ++i) {
          edges[i].node.reset();
          edges[i].leaf.reset();
        }
        NodeAccess::released(*node) = true;
      }
    }
  } catch (...) {
    for (const std::shared_ptr<Node>& node : heap) NodeAccess::pending(*node) = Tensor();
    throw;
  }
  // Leaves reached only through nodes that got no gradient (so never ran): final now, in the
  // walk's order.
  for (const std::shared_ptr<VarImpl>& leaf : uses.order) {
    if (uses.count[leaf.get()] > 0) options.grad_ready(Var(leaf));
  }
}

}  // namespace ruccl::autodiff
