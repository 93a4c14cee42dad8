#pragma once
// Indexing with lists of integers, slices, None, Ellipsis and one tensor (Tensor::index, the
// index types are in tensor/core/tensor.h): the free forms, and the plan autodiff's index reuses.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl {

/// x.index(indices) (see Tensor::index).
Tensor index(const Tensor& x, std::span<const indexing::TensorIndex> indices);
Tensor index(const Tensor& x, std::initializer_list<indexing::TensorIndex> indices);

namespace detail {

/// An index list resolved against one shape: the view part as one step per input dim (plus the
/// new axes), then at most one index_select. Internal: Tensor::index, index_put_ and
/// autodiff::index (whose backward applies the same plan to zeros of the input's shape).
struct IndexPlan {
  enum class StepKind : std::uint8_t { Keep, Select, Slice, NewAxis };
  struct Step {
    StepKind kind = StepKind::Keep;
    std::int64_t start = 0;   // Select: the index; Slice: the first element (both in [0, size])
    std::int64_t step = 1;    // Slice only
    std::int64_t length = 0;  // Slice only
  };
  std::vector<Step> steps;
  /// The dim of view() that tensor_index picks along; -1 when there is no tensor index.
  std::int64_t tensor_dim = -1;
  /// I64, 1-d, every entry in [0, size of that dim), on the indexed tensor's device.
  Tensor tensor_index;

  /// The view part applied to `x` (of the planned shape, any strides): shares x's storage.
  Tensor view(const Tensor& x) const;
  /// view(x), then index_select along tensor_dim when there is a tensor index.
  Tensor apply(const Tensor& x) const;
};

/// Resolves `indices` against `shape` (x's device for a tensor index); errors name `op`.
IndexPlan plan_index(const Shape& shape, Device device,
                     std::span<const indexing::TensorIndex> indices, const char* op);

}  // namespace detail
}  // namespace ruccl
