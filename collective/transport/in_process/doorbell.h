#pragma once
// Doorbell: spin-then-block waiting for in-process ranks.
//
// A waiter follows its WaitPolicy (collective/common/wait_policy.h): it spins (with the CPU's pause
// hint), then spins with sched_yield so that ranks it waits for that share its core can run, and
// finally sleeps on a futex until a publisher rings the bell or the deadline passes. Publishers
// only pay for the wake-up system call when somebody sleeps (bench/handoff_bench measures both).
#include <atomic>
#include <chrono>
#include <cstdint>

#include "collective/common/deadline.h"
#include "collective/common/wait_policy.h"

namespace ruccl {

/// A futex word that waiters sleep on and publishers ring after changing shared state.
class Doorbell {
 public:
  /// Wakes every sleeper (cheap when nobody sleeps). Call after publishing a change.
  void ring() noexcept;

  /// Waits until `ready()` returns true (returns true) or the deadline passes (returns false).
  /// `ready` must only read atomics that publishers change before calling ring().
  template <typename Ready>
  bool wait(Ready&& ready, const Deadline& deadline, const WaitPolicy& policy) {
    if (ready()) return true;
    const auto start = Deadline::Clock::now();
    for (std::uint32_t i = 1;; ++i) {
      if (ready()) return true;
      if ((i & 63) == 0) {
        const auto now = Deadline::Clock::now();
        if (policy.phase(now - start) != WaitPhase::Spin || deadline.expired(now)) break;
      }
      cpu_relax();
    }
    while (policy.phase(Deadline::Clock::now() - start) != WaitPhase::Sleep) {
      yield_cpu();
      if (ready()) return true;
    }
    for (;;) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the fence in ring()
      const std::uint32_t seen = word_.load(std::memory_order_seq_cst);
      if (ready()) {
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        return true;
      }
      const auto now = Deadline::Clock::now();
      if (deadline.expired(now)) {
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        return ready();
      }
      sleep_until_rung(seen, deadline.at() - now);
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
  }

 private:
  static void cpu_relax() noexcept;
  static void yield_cpu() noexcept;
  /// Sleeps while the word still equals `seen`, at most `limit`.
  void sleep_until_rung(std::uint32_t seen, Deadline::Clock::duration limit) noexcept;

  alignas(64) std::atomic<std::uint32_t> word_{0};
  alignas(64) std::atomic<int> sleepers_{0};
};

}  // namespace ruccl
