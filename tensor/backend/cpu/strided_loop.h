#pragma once
// The CPU backend's iteration engine: walks N same-shaped strided tensors together. Dims that are
// contiguous across all of them are merged first, so a contiguous op becomes one flat loop; the
// kernel is called once per innermost run with byte pointers, byte strides and a length.
#include <array>
#include <cstdint>

#include "tensor/core/shape.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

template <int N>
struct StridedRun {
  std::array<char*, N> ptr;
  std::array<std::int64_t, N> stride;  // bytes between consecutive elements of the run
  std::int64_t n;
};

/// Calls `kernel(StridedRun<N>)` over every element of the tensors (all of shape `shape`).
template <int N, typename Kernel>
void for_each_run(const Shape& shape, const std::array<const Tensor*, N>& tensors,
                  Kernel&& kernel) {
  // Geometry in bytes, dims of size 1 dropped, innermost last.
  std::array<std::array<std::int64_t, Shape::kMaxDims>, N> strides{};
  std::array<std::int64_t, Shape::kMaxDims> sizes{};
  int nd = 0;
  for (std::int64_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;
    if (shape[d] == 1) continue;
    sizes[nd] = shape[d];
    for (int t = 0; t < N; ++t) {
      strides[t][nd] =
          tensors[t]->strides()[d] * static_cast<std::int64_t>(tensors[t]->element_size());
    }
    ++nd;
  }
  // Merge dim d-1 into d when every tensor steps over d-1 exactly as over a full run of d.
  int w = 0;
  for (int d = 0; d < nd; ++d) {
    bool merge = w > 0;
    for (int t = 0; t < N && merge; ++t) merge = strides[t][w - 1] == strides[t][d] * sizes[d];
    if (merge) {
      sizes[w - 1] *= sizes[d];
      for (int t = 0; t < N; ++t) strides[t][w - 1] = strides[t][d];
    } else {
      sizes[w] = sizes[d];
      for (int t = 0; t < N; ++t) strides[t][w] = strides[t][d];
      ++w;
    }
  }
  nd = w;
  StridedRun<N> run;
  for (int t = 0; t < N; ++t) run.ptr[t] = static_cast<char*>(tensors[t]->data_ptr());
  if (nd == 0) {  // a single element
    for (int t = 0; t < N; ++t) run.stride[t] = 0;
    run.n = 1;
    kernel(run);
    return;
  }
  const int inner = nd - 1;
  for (int t = 0; t < N; ++t) run.stride[t] = strides[t][inner];
  run.n = sizes[inner];
  std::array<std::int64_t, Shape::kMaxDims> index{};
  std::array<char*, N> base = run.ptr;
  while (true) {
    kernel(run);
    int d = inner - 1;
    for (; d >= 0; --d) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
    for (int t = 0; t < N; ++t) {
      std::int64_t off = 0;
      for (int k = 0; k < inner; ++k) off += index[k] * strides[t][k];
      run.ptr[t] = base[t] + off;
    }
  }
}

}  // namespace ruccl::cpu
