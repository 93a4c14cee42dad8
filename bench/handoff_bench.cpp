// handoff_bench: what one hand-off between two threads costs, the floor under every step of an
// in-process collective and the reason for the spin, yield, then sleep of every wait
// (collective/common/wait_policy.h; in process: transport/in_process/doorbell.h). Two threads pass
// a turn back and forth; one hand-off is half a round trip. Three mechanisms:
//   spin      both threads spin on an atomic (with the CPU's pause hint)
//   yield     both threads loop on the atomic calling sched_yield (std::this_thread::yield)
//   condvar   std::mutex + std::condition_variable: the waiter blocks and must be woken
// Prints the median and minimum hand-off in microseconds (median over rounds of 1000 hand-offs for
// spin and yield; of single hand-offs for condvar, whose cost is a wake-up).
//
//   handoff_bench [--rounds N]     (default 200)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

void relax(bool yield) {
  if (yield) {
    std::this_thread::yield();
  } else {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
}

/// Microseconds per hand-off over `rounds` rounds of `per_round` round trips on an atomic turn.
std::vector<double> atomic_handoffs(bool yield, int rounds, int per_round) {
  std::atomic<long> turn{0};
  const long total = static_cast<long>(rounds) * per_round;
  std::thread partner([&] {
    for (long i = 0; i < total; ++i) {
      while (turn.load(std::memory_order_acquire) != 2 * i + 1) relax(yield);
      turn.store(2 * i + 2, std::memory_order_release);
    }
  });
  std::vector<double> us;
  long i = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int k = 0; k < per_round; ++k, ++i) {
      turn.store(2 * i + 1, std::memory_order_release);
      while (turn.load(std::memory_order_acquire) != 2 * i + 2) relax(yield);
    }
    const double elapsed = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    us.push_back(elapsed / (2.0 * per_round));
  }
  partner.join();
  return us;
}

/// Microseconds per hand-off of single condition-variable round trips.
std::vector<double> condvar_handoffs(int count) {
  std::mutex m;
  std::condition_variable cv;
  long turn = 0;
  std::thread partner([&] {
    for (long i = 0; i < count; ++i) {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return turn == 2 * i + 1; });
      turn = 2 * i + 2;
      cv.notify_all();
    }
  });
  std::vector<double> us;
  for (long i = 0; i < count; ++i) {
    const auto t0 = Clock::now();
    std::unique_lock<std::mutex> lock(m);
    turn = 2 * i + 1;
    cv.notify_all();
    cv.wait(lock, [&] { return turn == 2 * i + 2; });
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2.0);
  }
  partner.join();
  return us;
}

void report(const char* name, std::vector<double> us) {
  std::sort(us.begin(), us.end());
  std::printf("| %s | %.3f | %.3f |\n", name, us[us.size() / 2], us.front());
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 200;
  for (int a = 1; a < argc; ++a) {
    if (!std::strcmp(argv[a], "--rounds") && a + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++a]));
    } else {
      std::fprintf(stderr, "usage: handoff_bench [--rounds N]\n");
      return 2;
    }
  }
  std::printf("# one hand-off between two threads (half a round trip), %u hardware threads\n\n",
              std::thread::hardware_concurrency());
  std::printf("| mechanism | median µs | min µs |\n|---|---:|---:|\n");
  report("spin (atomic + pause)", atomic_handoffs(false, rounds, 1000));
  report("yield (atomic + sched_yield)", atomic_handoffs(true, rounds, 1000));
  report("condvar (mutex + condition_variable)", condvar_handoffs(rounds * 10));
  return 0;
}
