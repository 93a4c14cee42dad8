#pragma once
// The reduction kernels of the device collectives (fold_kernels.cu): one kernel folds up to
// kMaxFoldSources device buffers elementwise, left to right in a given order, exactly as the host
// ReduceKernel does (collective/algorithms/reduce_kernel.h): `acc = acc (op) next`, integer Sum and
// Prod wrap, Min/Max keep the first NaN met, Mean divides once at the end. Every floating add,
// multiply and divide is an explicitly rounded IEEE operation (__fadd_rn, ...): nvcc can never
// contract them into an FMA, so F32/F64 results are bit-identical to the CPU's.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace ruccl::cuda::fold {

/// The element types the kernels reduce (the accumulation dtypes of collective/algorithms).
enum class Elem : std::uint8_t { F32, F64, I32, I64 };
/// The combining operations (Mean is Sum with FoldArgs::divisor set).
enum class Op : std::uint8_t { Sum, Prod, Min, Max, BitAnd, BitOr, BitXor };

inline constexpr int kMaxFoldSources = 64;

/// One fold: out[i] for i in [0, n) is element `first + i` of a `total`-element reduction.
/// `sources[k]` points at element 0 of the k-th buffer (each `total` elements long).
///   - rotate == false: the fold runs over sources 0, 1, ..., count - 1 in that order;
///   - rotate == true: `count` is the world size W and the element's canonical order is used
///     (collective/algorithms/algorithm.h): element e of chunk c (balanced chunks of `total` over
///     W) folds sources (c + 1) % W, (c + 2) % W, ..., c.
/// divisor > 0 divides the result by it (Mean); 0 leaves it.
struct FoldArgs {
  const void* sources[kMaxFoldSources];
  int count = 0;
  bool rotate = false;
  int divisor = 0;
  std::size_t total = 0;
  std::size_t first = 0;
  std::size_t n = 0;
};

/// Launches the fold on `stream` (asynchronous; checks the launch through RUCCL_CUDA_CHECK).
/// Throws DTypeError for a bitwise op on a floating type, ValueError for a bad source count.
void launch_fold(Elem elem, Op op, void* out, const FoldArgs& args, cudaStream_t stream);

/// The chunk (0 .. w - 1) element `e` of a `total`-element buffer falls in, for balanced chunks
/// (chunk_begin/chunk_size of collective/algorithms/algorithm.h). Host and device.
__host__ __device__ inline std::size_t chunk_of(std::size_t e, std::size_t total, std::size_t w) {
  const std::size_t q = total / w;
  const std::size_t rem = total % w;
  const std::size_t big = rem * (q + 1);  // elements in the first `rem` chunks (q + 1 each)
  return e < big ? e / (q + 1) : rem + (e - big) / q;
}

}  // namespace ruccl::cuda::fold
