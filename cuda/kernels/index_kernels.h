#pragma once
// Launchers of cuda/kernels/index.cu (see its comment for the kernels and the bounds checks).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/tensor_ref.h"

namespace ruccl::cuda {

/// out[p] = x[p] + index[p] * step bytes, over out's shape: x is pinned along dim (stride 0 there),
/// index has out's shape (gather) or is the 1-d index broadcast along dim (index_select).
struct GatherArgs {
  TensorRef out, x, index;
  std::int64_t step = 0;   // bytes between x's rows along dim
  std::int64_t bound = 0;  // x's size along dim
  // Where a bad index is reported: pos_size == 0: the linear position over out's shape (gather);
  // else (i / pos_inner) % pos_size, the position in the 1-d index (index_select).
  std::int64_t pos_inner = 1;
  std::int64_t pos_size = 0;
  unsigned long long* first_bad = nullptr;
};
void launch_gather(const GatherArgs& args, cudaStream_t stream);

/// For each line of src (shape with dim of size 1): out[line + index[j] * out_step] +=
/// src[line + j * src_step], j = 0..n-1 in order. out and index are pinned/broadcast the same way.
struct ScatterArgs {
  TensorRef out, src, index;                                // sizes: src's with dim set to 1
  std::int64_t n = 0;                                       // src's size along dim
  std::int64_t out_step = 0, src_step = 0, index_step = 0;  // bytes along dim
  std::int64_t bound = 0;                                   // out's size along dim
  std::int64_t inner = 1;  // elements of src's shape after dim (the line's inner coordinate)
  bool index_1d = false;   // index_add: positions are j
  unsigned long long* first_bad = nullptr;
};
void launch_scatter_add(const ScatterArgs& args, cudaStream_t stream);

/// out[i, indices[i]] = 1 over the contiguous indices (out zero-filled, [n, classes]).
void launch_one_hot(const TensorRef& indices, std::int64_t classes, const TensorRef& out,
                    unsigned long long* first_bad, cudaStream_t stream);

}  // namespace ruccl::cuda
