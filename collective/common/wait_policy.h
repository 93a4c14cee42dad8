#pragma once
// WaitPolicy: how a rank spends its core while what it waits for has not happened. A wait spins
// (retries at once), then yields (sched_yield between tries, so a rank that shares this core
// runs), then sleeps (poll() or a futex, until woken). The three waits of ruCCL use it: the
// in-process Doorbell (transport/in_process/doorbell.h), the process transport's progress loop
// (TCP and shared memory, transport/process/) and the MPI transport's (mpi/mpi_transport_drive.h).
// The defaults below are measured; why each number is what it is: docs/performance-history.md,
// "## TCP waits: spin, yield, sleep" (change one only with a measurement).
#include <algorithm>
#include <chrono>
#include <thread>

namespace ruccl {

/// Where a wait is, by how long it has seen nothing move.
enum class WaitPhase : unsigned char { Spin, Yield, Sleep };

struct WaitPolicy {
  /// kForever as `spin`: the wait never yields; as `yield`: it never sleeps.
  static constexpr std::chrono::nanoseconds kForever = std::chrono::nanoseconds::max();

  /// How long a wait spins.
  std::chrono::nanoseconds spin{0};
  /// How long it then yields before it sleeps.
  std::chrono::nanoseconds yield{0};

  /// The phase of a wait that has seen nothing move for `quiet`.
  WaitPhase phase(std::chrono::nanoseconds quiet) const noexcept {
    if (quiet < spin) return WaitPhase::Spin;
    if (yield == kForever || quiet - spin < yield) return WaitPhase::Yield;
    return WaitPhase::Sleep;
  }

  /// Whether `local_ranks` ranks on this machine outnumber its cores: a spinning rank would then
  /// take the core of the rank it waits for.
  static bool oversubscribed(int local_ranks) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return static_cast<unsigned>(std::max(1, local_ranks)) > cores;
  }

  /// Ranks that are threads of one process (a hand-off costs ~0.1 us spinning, ~40 us through a
  /// futex): spin 5 us, yield up to 100 us (a peer the scheduler put on this core runs at once),
  /// then sleep; more ranks than cores: spin 1 us, yield up to 1 ms.
  static WaitPolicy in_process(int world_size) {
    using std::chrono::microseconds;
    if (oversubscribed(world_size)) return WaitPolicy{microseconds(1), microseconds(1000)};
    return WaitPolicy{microseconds(5), microseconds(100)};
  }

  /// Ranks that are processes, the process transport (TcpTransportOptions::spin, yield; 0 spin
  /// and negative yield: these defaults). Counted from the last byte the rank moved. Every rank
  /// has a core: spin 50 us, never yield; more ranks than cores: spin 2 us, yield up to 100 us.
  static WaitPolicy process(int local_ranks, std::chrono::nanoseconds spin = {},
                            std::chrono::nanoseconds yield = std::chrono::nanoseconds(-1)) {
    using std::chrono::microseconds;
    const bool over = oversubscribed(local_ranks);
    WaitPolicy policy;
    policy.spin = spin.count() > 0 ? spin : over ? microseconds(2) : microseconds(50);
    policy.yield = yield.count() >= 0 ? yield : over ? microseconds(100) : microseconds(0);
    return policy;
  }

  /// The MPI transport (MpiTransportOptions::spin; 0: this default): it never sleeps (a sleeping
  /// rank would stall MPI's progress, as MPI_Wait never sleeps either). Every rank has a core and
  /// MPI was not told to yield when idle: spin only; else spin 2 us, then yield.
  static WaitPolicy mpi(int local_ranks, bool yield_when_idle, std::chrono::nanoseconds spin = {}) {
    WaitPolicy policy;
    policy.spin = spin.count() > 0                                 ? spin
                  : oversubscribed(local_ranks) || yield_when_idle ? std::chrono::microseconds(2)
                                                                   : kForever;
    policy.yield = kForever;
    return policy;
  }
};

}  // namespace ruccl
