#pragma once
// What a kernel launcher needs of a tensor (no Tensor, no shared_ptr): the address of element 0,
// the dtype, sizes and element strides. Built by the backend (cuda/backend) for each call.
#include <cstdint>
#include <type_traits>

#include "cuda/kernels/offset_calculator.h"
#include "tensor/core/dtype.h"

namespace ruccl::cuda {

struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::F32;
  int ndim = 0;
  std::int64_t sizes[kMaxDims] = {};
  std::int64_t strides[kMaxDims] = {};  // elements

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  bool is_contiguous() const {
    std::int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[d] != expected) return false;
      expected *= sizes[d];
    }
    return true;
  }
};

/// A scalar operand as it came (Scalar's double or int64), converted by the launcher.
struct ScalarArg {
  double f = 0.0;
  std::int64_t i = 0;
  bool is_int = false;

  template <typename C>
  C as() const {
    if constexpr (std::is_same_v<C, bool>) {
      return is_int ? i != 0 : f != 0.0;
    } else if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(is_int ? i : static_cast<std::int64_t>(f));
    } else {
      return static_cast<C>(is_int ? static_cast<double>(i) : f);
    }
  }
};

/// Geometry of operands that all have refs[0]'s sizes (out first).
template <int N>
Geometry<N> geometry_of(const TensorRef* const (&refs)[N]) {
  const std::int64_t* strides[N];
  std::int64_t elem[N];
  for (int k = 0; k < N; ++k) {
    strides[k] = refs[k]->strides;
    elem[k] = static_cast<std::int64_t>(dtype_size(refs[k]->dtype));
  }
  return make_geometry<N>(refs[0]->ndim, refs[0]->sizes, strides, elem);
}

}  // namespace ruccl::cuda
