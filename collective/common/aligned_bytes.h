#pragma once
// AlignedBytes: a byte vector whose block begins on a cache line (64 bytes), for the buffers a
// transport hands to the kernel or to MPI. A copy between buffers whose offsets within a cache
// line differ runs at a fraction of the speed of one between aligned buffers (the kernel's copy
// between processes, OpenMPI's single-copy CMA, measured 2.5x slower from a tensor into a
// std::vector's block, which malloc places 16 bytes into a cache line).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace ruccl {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::size_t kAlignment = 64;

  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T) - kAlignment) throw std::bad_alloc();
    const std::size_t bytes = (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

using AlignedBytes = std::vector<std::uint8_t, CacheLineAllocator<std::uint8_t>>;

}  // namespace ruccl
