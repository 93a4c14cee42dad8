#include "collective/transport/in_process/doorbell.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <ctime>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace ruccl {

void Doorbell::ring() noexcept {
  // seq_cst pairs with the waiter's seq_cst increment of sleepers_ and load of word_: either the
  // waiter sees the published change in ready(), or we see it sleeping and wake it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  word_.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

void Doorbell::cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

void Doorbell::yield_cpu() noexcept { sched_yield(); }

void Doorbell::sleep_until_rung(std::uint32_t seen, Deadline::Clock::duration limit) noexcept {
  // Never sleep longer than 100 ms at a time: a safety net, not needed for correctness.
  const auto capped = std::min<Deadline::Clock::duration>(limit, std::chrono::milliseconds(100));
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(capped).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word_), FUTEX_WAIT_PRIVATE, seen, &ts,
          nullptr, 0);
}

}  // namespace ruccl
