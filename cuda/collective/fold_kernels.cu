// The fold kernels of the device collectives (fold_kernels.cuh).
#include <cstdint>

#include "cuda/collective/fold_kernels.cuh"
#include "cuda/core/check.h"
#include "tensor/core/error.h"

namespace ruccl::cuda::fold {

namespace {

// IEEE-rounded floating operations nvcc never contracts; wrapping integer arithmetic.
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline std::int32_t add(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
}
__device__ inline std::int64_t add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
__device__ inline std::int32_t mul(std::int32_t a, std::int32_t b) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) * static_cast<std::uint32_t>(b));
}
__device__ inline std::int64_t mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}
__device__ inline float divide(float a, int w) { return __fdiv_rn(a, static_cast<float>(w)); }
__device__ inline double divide(double a, int w) { return __ddiv_rn(a, static_cast<double>(w)); }
template <typename T>
__device__ inline T divide(T a, int) {
  return a;  // never launched: Mean is floating only
}

template <typename T>
__device__ inline bool is_nan(T v) {
  return v != v;
}

template <typename T, Op kOp>
__device__ inline T apply(T a, T b) {
  if constexpr (kOp == Op::Sum) {
    return add(a, b);
  } else if constexpr (kOp == Op::Prod) {
    return mul(a, b);
  } else if constexpr (kOp == Op::Min) {
    const T m = b < a ? b : a;  // the accumulated NaN stays, then a NaN operand wins
    const T nan_or_m = is_nan(b) ? b : m;
    return is_nan(a) ? a : nan_or_m;
  } else if constexpr (kOp == Op::Max) {
    const T m = a < b ? b : a;
    const T nan_or_m = is_nan(b) ? b : m;
    return is_nan(a) ? a : nan_or_m;
  } else if constexpr (kOp == Op::BitAnd) {
    return a & b;
  } else if constexpr (kOp == Op::BitOr) {
    return a | b;
  } else {
    return a ^ b;
  }
}

template <typename T, Op kOp>
__global__ void fold_kernel(T* out, FoldArgs args) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  const auto w = static_cast<std::size_t>(args.count);
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < args.n;
       i += stride) {
    const std::size_t e = args.first + i;
    const std::size_t base = args.rotate ? chunk_of(e, args.total, w) + 1 : 0;
    T acc = static_cast<const T*>(args.sources[base % w])[e];
    for (std::size_t k = 1; k < w; ++k) {
      acc = apply<T, kOp>(acc, static_cast<const T*>(args.sources[(base + k) % w])[e]);
    }
    if (args.divisor > 0) acc = divide(acc, args.divisor);
    out[i] = acc;
  }
}

template <typename T, Op kOp>
void launch(void* out, const FoldArgs& args, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const std::size_t blocks = (args.n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 8192 ? blocks : 8192);
  fold_kernel<T, kOp><<<grid, kThreads, 0, stream>>>(static_cast<T*>(out), args);
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_arithmetic(Op op, void* out, const FoldArgs& args, cudaStream_t stream) {
  switch (op) {
    case Op::Sum:
      return launch<T, Op::Sum>(out, args, stream);
    case Op::Prod:
      return launch<T, Op::Prod>(out, args, stream);
    case Op::Min:
      return launch<T, Op::Min>(out, args, stream);
    case Op::Max:
      return launch<T, Op::Max>(out, args, stream);
    default:
      break;
  }
  throw DTypeError(
      "launch_fold: expected Sum, Prod, Min or Max for a floating type, got a bitwise operation");
}

template <typename T>
void launch_integer(Op op, void* out, const FoldArgs& args, cudaStream_t stream) {
  switch (op) {
    case Op::BitAnd:
      return launch<T, Op::BitAnd>(out, args, stream);
    case Op::BitOr:
      return launch<T, Op::BitOr>(out, args, stream);
    case Op::BitXor:
      return launch<T, Op::BitXor>(out, args, stream);
    default:
      return launch_arithmetic<T>(op, out, args, stream);
  }
}

}  // namespace

void launch_fold(Elem elem, Op op, void* out, const FoldArgs& args, cudaStream_t stream) {
  if (args.n == 0) return;
  if (args.count < 1 || args.count > kMaxFoldSources) {
    throw ValueError(
        str("launch_fold: expected 1 to ", kMaxFoldSources, " sources, got ", args.count));
  }
  switch (elem) {
    case Elem::F32:
      return launch_arithmetic<float>(op, out, args, stream);
    case Elem::F64:
      return launch_arithmetic<double>(op, out, args, stream);
    case Elem::I32:
      return launch_integer<std::int32_t>(op, out, args, stream);
    case Elem::I64:
      return launch_integer<std::int64_t>(op, out, args, stream);
  }
}

}  // namespace ruccl::cuda::fold
