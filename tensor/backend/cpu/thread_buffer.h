#pragma once
// Per-thread packing buffers for the GEMM kernels (cpu_matmul.cpp, cpu_sgemm.cpp). Fresh buffers
// per call would cost page faults (a 256 KiB+ block each call: n = 256 ran at 35 instead of 200
// GFLOP/s), so each thread keeps its own, grown on demand, for its lifetime.
#include <cstddef>
#include <cstdlib>
#include <new>

namespace ruccl::cpu {

/// A 64-byte aligned buffer of at least `elements` T belonging to the calling thread; its contents
/// do not survive a call that grows it. `Slot` tells apart buffers one thread uses at the same
/// time.
template <typename T, int Slot>
T* thread_buffer(std::size_t elements) {
  struct Buffer {
    T* data = nullptr;
    std::size_t capacity = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (buffer.capacity < elements) {
    std::free(buffer.data);
    buffer.data = nullptr;
    buffer.capacity = 0;
    const std::size_t bytes = (elements * sizeof(T) + 63) / 64 * 64;
    buffer.data = static_cast<T*>(std::aligned_alloc(64, bytes));
    if (buffer.data == nullptr) throw std::bad_alloc();
    buffer.capacity = elements;
  }
  return buffer.data;
}

}  // namespace ruccl::cpu
