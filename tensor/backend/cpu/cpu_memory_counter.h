#pragma once
// MemoryCounter: the CPU memory that tensors allocated on one thread hold, and its peak (the
// allocator's own accounting, like torch.cuda.max_memory_allocated for host memory, per thread so
// that ranks that are threads of one process are measured apart).
//
//   cpu::MemoryCounter counter;           // counts this thread's allocations from now on
//   ... train a step ...
//   counter.peak_bytes();                 // the most bytes they held at once
//
// Every Storage that CpuBackend::allocate makes on the thread while the counter lives adds its
// byte count (as requested, before alignment) and subtracts it when freed, on whatever thread
// that happens, even after the counter is gone. Allocations of other threads (a collective's
// progress thread) are not counted. One counter per thread at a time (a second one on the same
// thread is a ValueError).
#include <cstdint>
#include <memory>

namespace ruccl::cpu {

/// See the file comment.
class MemoryCounter {
 public:
  MemoryCounter();
  ~MemoryCounter();
  MemoryCounter(const MemoryCounter&) = delete;
  MemoryCounter& operator=(const MemoryCounter&) = delete;

  /// Bytes that the counted allocations hold now.
  std::int64_t bytes_in_use() const;
  /// The most bytes they held at once since the counter started or reset_peak().
  std::int64_t peak_bytes() const;
  /// Starts a new peak from bytes_in_use().
  void reset_peak();

  struct State;  // shared with the storages it counted

 private:
  std::shared_ptr<State> state_;
};

/// The counter of this thread, if any (CpuBackend::allocate's).
std::shared_ptr<MemoryCounter::State> active_memory_counter();
/// Records `bytes` allocated under `state`; returns the context for the storage's deleter.
void* count_allocation(const std::shared_ptr<MemoryCounter::State>& state, std::size_t bytes);
/// Undoes count_allocation when the storage is freed.
void count_free(void* context);

}  // namespace ruccl::cpu
