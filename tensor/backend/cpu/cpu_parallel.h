#pragma once
// Intra-op parallelism for the CPU kernels: a small persistent thread pool (std::thread, so it is
// clean under ThreadSanitizer, unlike libgomp) and helpers that split an elementwise iteration
// into chunks. Work is split so that results never depend on the thread count: elementwise
// chunks write disjoint outputs, and reductions use a partition fixed by the shape alone
// (cpu_reduce.cpp).
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/strided_loop.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {

/// Below this many elements a kernel runs on the calling thread: waking a worker costs a few
/// microseconds, about what 64K floats take to stream.
constexpr std::int64_t kParallelMinElements = std::int64_t{1} << 16;

/// A non-owning reference to a callable `void(std::int64_t)` (no allocation, unlike std::function).
class TaskRef {
 public:
  template <typename F>
  TaskRef(const F& f)  // NOLINT: implicit on purpose, like std::function_ref
      : object_(&f), call_([](const void* o, std::int64_t i) { (*static_cast<const F*>(o))(i); }) {}
  void operator()(std::int64_t i) const { call_(object_, i); }

 private:
  const void* object_;
  void (*call_)(const void*, std::int64_t);
};

/// Runs task(i) for every i in [0, n_tasks) on up to `threads` threads, the caller included, and
/// returns when all are done. The first exception a task throws is rethrown here. Nested calls,
/// and calls made while another thread is using the pool, run serially on the calling thread.
void parallel_for(std::int64_t n_tasks, int threads, TaskRef task);

/// How many threads an op over `numel` elements should use: 1 below kParallelMinElements, else
/// num_threads().
inline int threads_for(std::int64_t numel) {
  if (numel < kParallelMinElements) return 1;
  const int n = num_threads();
  return n < 1 ? 1 : n;
}

/// The dim to split `shape` along for `parts` chunks: the outermost dim of size >= 4 * parts, else
/// the largest dim; -1 when no dim has at least 2 elements.
inline std::int64_t split_dim(const Shape& shape, int parts) {
  std::int64_t best = -1;
  for (std::int64_t d = 0; d < shape.size(); ++d) {
    if (shape[d] >= 4 * static_cast<std::int64_t>(parts)) return d;
    if (shape[d] >= 2 && (best < 0 || shape[d] > shape[best])) best = d;
  }
  return best;
}

/// The element stride with which `t` walks its own shape as one flat run: 1 when contiguous, 0
/// when every element is the same (a broadcast scalar), -1 otherwise.
inline std::int64_t flat_stride(const Tensor& t) {
  const Shape& shape = t.shape();
  const Shape& strides = t.strides();
  bool contiguous = true;
  bool broadcast = true;
  std::int64_t expected = 1;
  for (std::int64_t d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    contiguous = contiguous && strides[d] == expected;
    broadcast = broadcast && strides[d] == 0;
    expected *= shape[d];
  }
  return contiguous ? 1 : (broadcast ? 0 : -1);
}

/// for_each_run, split across threads when the tensors are large. The kernel is called
/// concurrently on disjoint chunks, so it must only write through the run's pointers. `work` is
/// the number of elements the whole call touches (default: those of `shape`).
///
/// Fast path: when every tensor is contiguous or a broadcast scalar, the whole iteration is one
/// run (no dim merging), and threads take equal slices of it, aligned to 64 elements.
template <int N, typename Kernel>
void parallel_for_each_run(const Shape& shape, const std::array<const Tensor*, N>& tensors,
                           const Kernel& kernel, std::int64_t work = -1) {
  std::int64_t numel = 1;
  for (std::int64_t d = 0; d < shape.size(); ++d) numel *= shape[d];
  if (numel == 0) return;
  if (work < 0) work = numel;
  const int threads = threads_for(work);
  StridedRun<N> run;
  bool flat = true;
  for (int t = 0; t < N && flat; ++t) {
    const std::int64_t s = flat_stride(*tensors[t]);
    flat = s >= 0;
    run.stride[t] = s * static_cast<std::int64_t>(tensors[t]->element_size());
    run.ptr[t] = static_cast<char*>(tensors[t]->data_ptr());
  }
  if (flat) {
    run.n = numel;
    if (threads <= 1) {
      kernel(run);
      return;
    }
    constexpr std::int64_t kAlign = 64;
    const std::int64_t step = ((numel + threads - 1) / threads + kAlign - 1) / kAlign * kAlign;
    parallel_for((numel + step - 1) / step, threads, [&](std::int64_t c) {
      StridedRun<N> part = run;
      const std::int64_t start = c * step;
      part.n = start + step <= numel ? step : numel - start;
      for (int t = 0; t < N; ++t) part.ptr[t] += start * run.stride[t];
      kernel(part);
    });
    return;
  }
  const std::int64_t d = threads > 1 ? split_dim(shape, threads) : -1;
  if (d < 0) {
    for_each_run<N>(shape, tensors, kernel);
    return;
  }
  const std::int64_t size = shape[d];
  const std::int64_t chunks = size < threads ? size : threads;
  const std::int64_t step = (size + chunks - 1) / chunks;
  parallel_for(chunks, threads, [&](std::int64_t c) {
    const std::int64_t start = c * step;
    const std::int64_t length = start + step <= size ? step : size - start;
    if (length <= 0) return;
    std::array<Tensor, N> parts;
    std::array<const Tensor*, N> ptrs;
    for (int t = 0; t < N; ++t) {
      parts[t] = tensors[t]->narrow(d, start, length);
      ptrs[t] = &parts[t];
    }
    Shape sub = shape;
    sub[d] = length;
    for_each_run<N>(sub, ptrs, kernel);
  });
}

}  // namespace ruccl::cpu
