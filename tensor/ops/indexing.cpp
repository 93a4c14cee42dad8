// Tensor::index / index_put_ and the IndexPlan behind them (and behind autodiff::index): an index
// list becomes one strided view (integers, slices, None, Ellipsis) plus at most one index_select.
#include "tensor/ops/indexing.h"

#include <algorithm>
#include <string_view>

#include "tensor/ops/elementwise.h"
#include "tensor/ops/index.h"
#include "tensor/ops/reduce.h"

namespace ruccl {

using indexing::TensorIndex;

indexing::TensorIndex::TensorIndex(const char* ellipsis) : kind_(Kind::Ellipsis) {
  RUCCL_CHECK(ellipsis != nullptr && std::string_view(ellipsis) == "...", ValueError,
              "TensorIndex: expected \"...\" (Ellipsis), got \"", ellipsis ? ellipsis : "(null)",
              "\"");
}

namespace detail {

namespace {

// Python's slice bounds: negative counts from the end, then clamped to [0, size].
std::int64_t clamp_bound(std::int64_t bound, std::int64_t size) {
  if (bound < 0) bound = std::max<std::int64_t>(bound + size, 0);  // bound >= INT64_MIN, size >= 0
  return std::min(bound, size);
}

// The 1-d I64 index of a tensor index for dim `d` of `size`: bounds-checked, negatives counted
// from the end, a Bool mask turned into the positions of its true entries.
Tensor resolve_tensor_index(const Tensor& t, std::int64_t d, std::int64_t size, Device device,
                            const char* op) {
  RUCCL_CHECK(t.defined(), ValueError, op, ": expected a defined index tensor for dim ", d,
              ", got an undefined one");
  RUCCL_CHECK(t.dtype() == DType::I64 || t.dtype() == DType::I32 || t.dtype() == DType::Bool,
              DTypeError, op, ": expected an I64, I32 or Bool index tensor for dim ", d, ", got ",
              t.dtype());
  RUCCL_CHECK(t.dim() == 1, ShapeError, op, ": expected a 1-d index tensor for dim ", d,
              ", got shape ", t.shape());
  RUCCL_CHECK(t.device() == device, DeviceError, op, ": expected an index tensor on ", device,
              " (the indexed tensor's device) for dim ", d, ", got one on ", t.device());
  if (t.dtype() == DType::Bool) {
    RUCCL_CHECK(t.numel() == size, ShapeError, op, ": expected a Bool mask of size ", size,
                " for dim ", d, " of size ", size, ", got one of size ", t.numel());
    const std::vector<bool> mask = t.to_vector<bool>();
    std::vector<std::int64_t> positions;
    for (std::int64_t i = 0; i < size; ++i) {
      if (mask[static_cast<std::size_t>(i)]) positions.push_back(i);
    }
    return Tensor::from_vector<std::int64_t>(
        positions, Shape{static_cast<std::int64_t>(positions.size())}, device);
  }
  Tensor idx = t.to(DType::I64);
  if (idx.numel() == 0) return idx;
  const std::int64_t lo = min(idx).to_vector<std::int64_t>()[0];
  const std::int64_t hi = max(idx).to_vector<std::int64_t>()[0];
  RUCCL_CHECK(lo >= -size && hi < size, IndexError, op, ": expected indices in [", -size, ", ",
              size, ") for dim ", d, " of size ", size, ", got ", lo < -size ? lo : hi);
  if (lo < 0) idx = where(lt(idx, 0), add(idx, size), idx);
  return idx;
}

}  // namespace

IndexPlan plan_index(const Shape& shape, Device device, std::span<const TensorIndex> indices,
                     const char* op) {
  const std::int64_t ndim = shape.size();
  std::int64_t consumed = 0;  // indices that use up an input dim
  std::int64_t ellipses = 0;
  std::int64_t new_axes = 0;
  for (const TensorIndex& i : indices) {
    const auto kind = i.kind();
    consumed += kind == TensorIndex::Kind::Integer || kind == TensorIndex::Kind::Slice ||
                kind == TensorIndex::Kind::Tensor;
    ellipses += kind == TensorIndex::Kind::Ellipsis;
    new_axes += kind == TensorIndex::Kind::None;
  }
  RUCCL_CHECK(ellipses <= 1, IndexError, op, ": expected at most one Ellipsis, got ", ellipses);
  RUCCL_CHECK(consumed <= ndim, IndexError, op, ": expected at most ", ndim,
              " indices (besides None and Ellipsis) for a tensor of shape ", shape, ", got ",
              consumed);
  IndexPlan plan;
  plan.steps.reserve(static_cast<std::size_t>(ndim + new_axes));
  std::int64_t d = 0;      // the input dim the next index applies to
  std::int64_t out_d = 0;  // the dim of the view it produces
  for (std::size_t pos = 0; pos < indices.size(); ++pos) {
    const TensorIndex& i = indices[pos];
    switch (i.kind()) {
      case TensorIndex::Kind::Integer: {
        const std::int64_t size = shape[d];
        const std::int64_t v = i.integer();
        RUCCL_CHECK(v >= -size && v < size, IndexError, op, ": expected an index in [", -size, ", ",
                    size, ") for dim ", d, " of size ", size, ", got ", v);
        plan.steps.push_back({IndexPlan::StepKind::Select, v < 0 ? v + size : v, 1, 0});
        ++d;
        break;
      }
      case TensorIndex::Kind::Slice: {
        const std::int64_t size = shape[d];
        const indexing::Slice& s = i.slice();
        const std::int64_t step = s.step().value_or(1);
        RUCCL_CHECK(step > 0, ValueError, op, ": expected a slice step > 0 for dim ", d, ", got ",
                    step, " (negative steps are not supported, as in torch)");
        const std::int64_t start = clamp_bound(s.start().value_or(0), size);
        const std::int64_t stop = clamp_bound(s.stop().value_or(size), size);
        const std::int64_t length = stop > start ? (stop - start - 1) / step + 1 : 0;
        plan.steps.push_back({IndexPlan::StepKind::Slice, start, step, length});
        ++d;
        ++out_d;
        break;
      }
      case TensorIndex::Kind::None:
        plan.steps.push_back({IndexPlan::StepKind::NewAxis, 0, 1, 0});
        ++out_d;
        break;
      case TensorIndex::Kind::Ellipsis:
        for (std::int64_t k = 0; k < ndim - consumed; ++k) {
          plan.steps.push_back({IndexPlan::StepKind::Keep, 0, 1, 0});
          ++d;
          ++out_d;
        }
        break;
      case TensorIndex::Kind::Tensor:
        RUCCL_CHECK(plan.tensor_dim < 0, IndexError, op,
                    ": expected at most one tensor index, got a second one at position ", pos,
                    " (torch's advanced indexing with several tensors is not supported; index "
                    "one dim at a time with index_select)");
        plan.tensor_index = resolve_tensor_index(i.tensor(), d, shape[d], device, op);
        plan.tensor_dim = out_d;
        plan.steps.push_back({IndexPlan::StepKind::Keep, 0, 1, 0});
        ++d;
        ++out_d;
        break;
    }
  }
  for (; d < ndim; ++d) {
    plan.steps.push_back({IndexPlan::StepKind::Keep, 0, 1, 0});
    ++out_d;
  }
  RUCCL_CHECK(out_d <= Shape::kMaxDims, ShapeError, op, ": expected a result with at most ",
              Shape::kMaxDims, " dims, got ", out_d, " (", new_axes, " None indices on ", shape,
              ")");
  return plan;
}

Tensor IndexPlan::view(const Tensor& x) const {
  Shape shape;
  for (std::size_t k = 0, d = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    if (s.kind == StepKind::Keep) shape.push_back(x.shape()[static_cast<std::int64_t>(d)]);
    if (s.kind == StepKind::Slice) shape.push_back(s.length);
    if (s.kind == StepKind::NewAxis) shape.push_back(1);
    d += s.kind != StepKind::NewAxis;
  }
  if (shape.numel() == 0) {  // touches nothing: any strides, and the view's own offset
    return x.as_strided(shape, shape.contiguous_strides("index", x.element_size()), x.offset());
  }
  // Non-empty: every selected and sliced element exists, so each offset and each stride * step
  // (taken only over a slice of length > 1, whose span lies inside the dim) stays inside the
  // storage: no overflow.
  Shape strides;
  std::int64_t offset = x.offset();
  std::int64_t d = 0;
  for (const Step& s : steps) {
    switch (s.kind) {
      case StepKind::Keep:
        strides.push_back(x.strides()[d++]);
        break;
      case StepKind::Select:
        offset += s.start * x.strides()[d++];
        break;
      case StepKind::Slice:
        offset += s.start * x.strides()[d];
        strides.push_back(s.length > 1 ? x.strides()[d] * s.step : x.strides()[d]);
        ++d;
        break;
      case StepKind::NewAxis:
        strides.push_back(1);
        break;
    }
  }
  return x.as_strided(shape, strides, offset);
}

Tensor IndexPlan::apply(const Tensor& x) const {
  Tensor v = view(x);
  return tensor_dim < 0 ? v : index_select(v, tensor_dim, tensor_index);
}

}  // namespace detail

Tensor index(const Tensor& x, std::span<const TensorIndex> indices) {
  RUCCL_CHECK(x.defined(), ValueError,
              "Tensor::index: expected a defined tensor, got an undefined one");
  return detail::plan_index(x.shape(), x.device(), indices, "Tensor::index").apply(x);
}

Tensor index(const Tensor& x, std::initializer_list<TensorIndex> indices) {
  return index(x, std::span<const TensorIndex>(indices.begin(), indices.size()));
}

Tensor Tensor::index(std::span<const TensorIndex> indices) const {
  return ruccl::index(*this, indices);
}

Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return ruccl::index(*this, indices);
}

namespace {

// The write of index_put_: `write(view_slice, j)` for each written slice, `j` the position in the
// tensor index (or -1 with no tensor index: the whole view at once).
template <typename Write>
void put(Tensor& x, std::span<const TensorIndex> indices, const char* op, Write&& write) {
  RUCCL_CHECK(x.defined(), ValueError, op, ": expected a defined tensor, got an undefined one");
  const detail::IndexPlan plan = detail::plan_index(x.shape(), x.device(), indices, op);
  const Tensor view = plan.view(x);
  if (plan.tensor_dim < 0) {
    write(view, view.shape(), -1, -1);
    return;
  }
  Shape indexed = view.shape();
  indexed[plan.tensor_dim] = plan.tensor_index.numel();
  const std::vector<std::int64_t> rows = plan.tensor_index.to_vector<std::int64_t>();
  for (std::size_t j = 0; j < rows.size(); ++j) {
    write(view.select(plan.tensor_dim, rows[j]), indexed, plan.tensor_dim,
          static_cast<std::int64_t>(j));
  }
  if (rows.empty()) write(Tensor(), indexed, -1, -1);  // still checks the value's shape
}

}  // namespace

Tensor& Tensor::index_put_(std::span<const TensorIndex> indices, const Tensor& value) {
  constexpr const char* op = "Tensor::index_put_";
  RUCCL_CHECK(value.defined(), ValueError, op,
              ": expected a defined value tensor, got an undefined one");
  RUCCL_CHECK(value.device() == device(), DeviceError, op, ": expected a value on ", device(),
              ", got one on ", value.device());
  // Read before writing: a value that aliases this tensor would see its own writes.
  const Tensor src = value.storage() == storage_ ? value.clone() : value;
  Tensor expanded;
  put(*this, indices, op,
      [&](const Tensor& target, const Shape& indexed, std::int64_t dim, std::int64_t j) {
        if (!expanded.defined()) {
          RUCCL_CHECK(broadcast_shapes(src.shape(), indexed, op) == indexed, ShapeError, op,
                      ": expected a value that broadcasts to the indexed shape ", indexed, ", got ",
                      src.shape());
          expanded = src.expand(indexed);
        }
        if (!target.defined()) return;
        Tensor t = target;
        t.copy_(dim < 0 ? expanded : expanded.select(dim, j));
      });
  return *this;
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) {
  return index_put_(std::span<const TensorIndex>(indices.begin(), indices.size()), value);
}

Tensor& Tensor::index_put_(std::span<const TensorIndex> indices, Scalar value) {
  put(*this, indices, "Tensor::index_put_",
      [&](const Tensor& target, const Shape&, std::int64_t, std::int64_t) {
        if (!target.defined()) return;
        Tensor t = target;
        t.fill_(value);
      });
  return *this;
}

Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, Scalar value) {
  return index_put_(std::span<const TensorIndex>(indices.begin(), indices.size()), value);
}

}  // namespace ruccl
