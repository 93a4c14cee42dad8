#pragma once
// Doorbell: spin-then-block waiting for in-process ranks.
//
// Waking a blocked thread costs about 40 us on the development machine (a 2-vCPU KVM guest), a
// spin hand-off about 0.1 us (bench/handoff_bench measures both). So a waiter first spins (with the
// CPU's pause hint), then spins with sched_yield so that ranks it waits for that share its core
// (more ranks than cores, or the scheduler placed two ranks on one core) can run, and finally
// sleeps on a futex until a publisher rings the bell or the deadline passes. Publishers only pay
// for the wake-up system call when somebody sleeps.
#include <atomic>
#include <chrono>
#include <cstdint>

#include "collective/common/deadline.h"

namespace ruccl {

/// How long a waiter spins, then spins with sched_yield, before it sleeps.
struct WaitPolicy {
  std::chrono::nanoseconds spin{std::chrono::microseconds(5)};
  std::chrono::nanoseconds yield{std::chrono::microseconds(100)};

  /// Every rank has a core: spin 5 us, then yield for up to 100 us (a peer the scheduler put on
  /// this core gets to run at once), then sleep. More ranks than cores: spin 1 us, yield up to
  /// 1 ms, then sleep.
  static WaitPolicy for_group(int world_size);
};

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
        if (now - start >= policy.spin || deadline.expired(now)) break;
      }
      cpu_relax();
    }
    while (Deadline::Clock::now() - start < policy.spin + policy.yield) {
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
