#include "collective/algorithms/reduce_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tensor/core/error.h"

namespace ruccl {

namespace {

// Elementwise functors: acc (left) op next (right).
template <typename T>
struct SumOp {
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));  // wraps, no UB
    } else {
      return a + b;
    }
  }
};
template <typename T>
struct ProdOp {
  static T apply(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  }
};
template <typename T>
struct MinOp {
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      // The accumulated NaN stays, then a NaN operand wins; selects, so it vectorises.
      const T m = b < a ? b : a;
      const T nan_or_m = b != b ? b : m;
      return a != a ? a : nan_or_m;
    }
    return b < a ? b : a;
  }
};
template <typename T>
struct MaxOp {
  static T apply(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      const T m = a < b ? b : a;
      const T nan_or_m = b != b ? b : m;
      return a != a ? a : nan_or_m;
    }
    return a < b ? b : a;
  }
};
template <typename T>
struct AndOp {
  static T apply(T a, T b) { return a & b; }
};
template <typename T>
struct OrOp {
  static T apply(T a, T b) { return a | b; }
};
template <typename T>
struct XorOp {
  static T apply(T a, T b) { return a ^ b; }
};

// Blocks of one 64-byte vector: the fixed-size inner loops vectorise even at -O2 (GCC's
// "very cheap" cost model refuses loops that need a runtime alias check or an epilogue), and
// loading a whole block before storing keeps `out` aliasing `a` or `b` well defined.
template <typename T, template <typename> class Op>
void combine_impl(void* out, const void* a, const void* b, std::size_t count) {
  constexpr std::size_t kLanes = 64 / sizeof(T);
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  std::size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    T xs[kLanes];
    T ys[kLanes];
    for (std::size_t j = 0; j < kLanes; ++j) xs[j] = x[i + j];
    for (std::size_t j = 0; j < kLanes; ++j) ys[j] = y[i + j];
    for (std::size_t j = 0; j < kLanes; ++j) o[i + j] = Op<T>::apply(xs[j], ys[j]);
  }
  for (; i < count; ++i) o[i] = Op<T>::apply(x[i], y[i]);
}

template <typename T>
void mean_finish(void* data, std::size_t count, int world_size) {
  constexpr std::size_t kLanes = 64 / sizeof(T);
  T* d = static_cast<T*>(data);
  const T w = static_cast<T>(world_size);
  std::size_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) d[i + j] = d[i + j] / w;
  }
  for (; i < count; ++i) d[i] = d[i] / w;
}

template <typename T>
void pick(ReduceOperation op, void (*&combine)(void*, const void*, const void*, std::size_t)) {
  switch (op) {
    case ReduceOperation::Sum:
    case ReduceOperation::Mean:
      combine = &combine_impl<T, SumOp>;
      return;
    case ReduceOperation::Prod:
      combine = &combine_impl<T, ProdOp>;
      return;
    case ReduceOperation::Min:
      combine = &combine_impl<T, MinOp>;
      return;
    case ReduceOperation::Max:
      combine = &combine_impl<T, MaxOp>;
      return;
    case ReduceOperation::BitAnd:
    case ReduceOperation::BitOr:
    case ReduceOperation::BitXor:
      if constexpr (std::is_integral_v<T>) {
        combine = op == ReduceOperation::BitAnd  ? &combine_impl<T, AndOp>
                  : op == ReduceOperation::BitOr ? &combine_impl<T, OrOp>
                                                 : &combine_impl<T, XorOp>;
        return;
      }
      break;
  }
  RUCCL_ASSERT(false, "no reduce kernel for ", reduce_operation_name(op));
}

}  // namespace

void copy_bytes(void* dst, const void* src, std::size_t nbytes) {
  if (nbytes != 0) std::memcpy(dst, src, nbytes);
}

ReduceKernel::ReduceKernel(DType dtype, ReduceOperation op)
    : dtype_(dtype), op_(op), element_size_(dtype_size(dtype)) {
  switch (dtype) {
    case DType::F32:
      pick<float>(op, combine_);
      if (op == ReduceOperation::Mean) finish_ = &mean_finish<float>;
      break;
    case DType::F64:
      pick<double>(op, combine_);
      if (op == ReduceOperation::Mean) finish_ = &mean_finish<double>;
      break;
    case DType::I32:
      pick<std::int32_t>(op, combine_);
      break;
    case DType::I64:
      pick<std::int64_t>(op, combine_);
      break;
    default:
      RUCCL_ASSERT(false, "ReduceKernel: not an accumulation dtype: ", dtype);
  }
  RUCCL_ASSERT(op != ReduceOperation::Mean || finish_ != nullptr, "Mean needs a floating dtype");
}

void ReduceKernel::combine(void* out, const void* a, const void* b, std::size_t count) const {
  if (count != 0) combine_(out, a, b, count);
}

void ReduceKernel::fold(void* out, std::span<const void* const> sources, std::size_t count) const {
  RUCCL_ASSERT(!sources.empty());
  if (count == 0) return;
  if (sources.size() == 1) {
    copy_bytes(out, sources[0], count * element_size_);
    return;
  }
  // Blocked so the partial result stays in L1 while the sources stream through.
  constexpr std::size_t kBlockBytes = 8192;
  const std::size_t block = std::max<std::size_t>(1, kBlockBytes / element_size_);
  auto* o = static_cast<unsigned char*>(out);
  for (std::size_t start = 0; start < count; start += block) {
    const std::size_t n = std::min(block, count - start);
    const std::size_t byte = start * element_size_;
    combine_(o + byte, static_cast<const unsigned char*>(sources[0]) + byte,
             static_cast<const unsigned char*>(sources[1]) + byte, n);
    for (std::size_t s = 2; s < sources.size(); ++s) {
      combine_(o + byte, o + byte, static_cast<const unsigned char*>(sources[s]) + byte, n);
    }
  }
}

void ReduceKernel::finish(void* data, std::size_t count, int world_size) const {
  if (finish_ != nullptr && count != 0) finish_(data, count, world_size);
}

}  // namespace ruccl
