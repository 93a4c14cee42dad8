#pragma once
// How a reduction is cut into GPU work (host-only arithmetic, unit-tested in tests/cuda_host).
//
// x's dims split into kept dims (out's size equals x's) and reduced dims (out's size is 1). Each
// side becomes a merged geometry: kept = [x strides, out strides], reduced = [x strides]. Two
// kernels:
//   row:    one warp per (output, split): the reduced elements are adjacent in memory (the
//           innermost reduced stride is one element) or nothing is kept, so a warp's lanes read
//           neighbouring elements; lanes fold their own elements in order, then a fixed shuffle
//           tree folds the 32 lanes;
//   column: one thread per (output, split): adjacent outputs are adjacent in memory (reducing an
//           outer dim), so a warp reads one contiguous row segment per step; each thread folds
//           its elements in order.
// With splits > 1 each output's reduced range is cut into `splits` chunks of `chunk` elements
// whose partial results a second kernel folds (one warp per output: lanes fold every 32nd
// partial in order, then the fixed shuffle tree). Every choice depends on the shape
// alone, never on the device or on timing: the same input gives bit-identical results run after
// run (no atomics).
#include <algorithm>
#include <cstdint>

#include "cuda/kernels/offset_calculator.h"
#include "cuda/kernels/tensor_ref.h"

namespace ruccl::cuda {

struct ReducePlan {
  Geometry<2> kept;     // over kept dims: byte strides of x and of out
  Geometry<1> reduced;  // over reduced dims: byte strides of x
  std::int64_t outputs = 0;
  std::int64_t length = 0;  // reduced elements per output
  bool row = true;
  std::int64_t splits = 1;
  std::int64_t chunk = 0;  // reduced elements per split (the last may have fewer)
};

/// Warps (row) or threads (column) the plan aims to keep busy before it stops splitting.
constexpr std::int64_t kTargetWarps = 16384;
constexpr std::int64_t kTargetThreads = std::int64_t{1} << 17;
/// Fewest reduced elements one split takes: 32 per lane in a warp, 64 per thread.
constexpr std::int64_t kMinRowChunk = 1024;
constexpr std::int64_t kMinColumnChunk = 64;
constexpr std::int64_t kMaxSplits = 16384;

/// The plan for reducing x over the dims where `reduced[d]` into out (x's shape with those dims
/// of size 1). x.numel() > 0.
inline ReducePlan plan_reduce(const TensorRef& x, const bool* reduced, const TensorRef& out) {
  ReducePlan p;
  std::int64_t ks[kMaxDims] = {};
  std::int64_t kx[kMaxDims] = {};
  std::int64_t ko[kMaxDims] = {};
  std::int64_t rs[kMaxDims] = {};
  std::int64_t rx[kMaxDims] = {};
  int nk = 0;
  int nr = 0;
  for (int d = 0; d < x.ndim; ++d) {
    if (reduced[d]) {
      rs[nr] = x.sizes[d];
      rx[nr++] = x.strides[d];
    } else {
      ks[nk] = x.sizes[d];
      kx[nk] = x.strides[d];
      ko[nk++] = out.strides[d];
    }
  }
  const std::int64_t xe = static_cast<std::int64_t>(dtype_size(x.dtype));
  const std::int64_t oe = static_cast<std::int64_t>(dtype_size(out.dtype));
  {
    const std::int64_t* strides[2] = {kx, ko};
    const std::int64_t elem[2] = {xe, oe};
    p.kept = make_geometry<2>(nk, ks, strides, elem);
  }
  {
    const std::int64_t* strides[1] = {rx};
    const std::int64_t elem[1] = {xe};
    p.reduced = make_geometry<1>(nr, rs, strides, elem);
  }
  p.outputs = p.kept.numel();
  p.length = p.reduced.numel();
  const bool reduced_adjacent =
      p.reduced.ndim == 0 || p.reduced.strides[0][p.reduced.ndim - 1] == xe;
  const bool kept_adjacent = p.kept.ndim > 0 && p.kept.strides[0][p.kept.ndim - 1] == xe;
  p.row = reduced_adjacent || !kept_adjacent || p.outputs == 1;
  const std::int64_t target = p.row ? kTargetWarps : kTargetThreads;
  const std::int64_t min_chunk = p.row ? kMinRowChunk : kMinColumnChunk;
  const std::int64_t want = (target + p.outputs - 1) / p.outputs;
  const std::int64_t most = (p.length + min_chunk - 1) / min_chunk;
  p.splits = std::max<std::int64_t>(1, std::min({want, most, kMaxSplits}));
  p.chunk = (p.length + p.splits - 1) / p.splits;
  p.splits = p.length == 0 ? 1 : (p.length + p.chunk - 1) / p.chunk;  // no empty split
  return p;
}

}  // namespace ruccl::cuda
