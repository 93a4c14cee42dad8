// Stress: groups fail at random points of their collectives (an abort from an outside thread, a
// rank whose deadline is shorter than its copy, a rank that throws, reset_collective racing the
// registered API) while peers read each other's buffers in place. Every buffer is fresh per call
// and freed as soon as the call returns or throws, so a sender that unwinds while a peer still
// reads its memory is a heap-use-after-free under AddressSanitizer (CI runs this under ASan+UBSan
// and TSan). In every build the test checks that each rank ends promptly with a CollectiveError
// of an expected kind, and that every call that completed returned the right values.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "tests/support/rank_harness.h"

namespace ruccl {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::RankOutcome;

enum class Op {
  Broadcast,
  AllReduceDirect,
  AllReduceRing,
  AllReduceTree,
  AllReduceCentral,
  AllGather,
  AllReduceRecursiveDoubling,
  AllReduceHalvingDoubling
};
enum class Failure { OutsideAbort, ShortDeadline, ThrowingRank };

constexpr Op kOps[] = {Op::Broadcast,
                       Op::AllReduceDirect,
                       Op::AllReduceRing,
                       Op::AllReduceTree,
                       Op::AllReduceCentral,
                       Op::AllGather,
                       Op::AllReduceRecursiveDoubling,
                       Op::AllReduceHalvingDoubling};
constexpr Failure kFailures[] = {Failure::OutsideAbort, Failure::ShortDeadline,
                                 Failure::ThrowingRank};

const char* op_name(Op op) {
  switch (op) {
    case Op::Broadcast:
      return "broadcast";
    case Op::AllReduceDirect:
      return "all_reduce direct";
    case Op::AllReduceRing:
      return "all_reduce ring";
    case Op::AllReduceTree:
      return "all_reduce tree";
    case Op::AllReduceCentral:
      return "all_reduce centralized";
    case Op::AllGather:
      return "all_gather";
    case Op::AllReduceRecursiveDoubling:
      return "all_reduce recursive doubling";
    case Op::AllReduceHalvingDoubling:
      return "all_reduce halving-doubling";
  }
  return "?";
}

Algorithm algorithm_of(Op op) {
  switch (op) {
    case Op::AllReduceRing:
      return Algorithm::Ring;
    case Op::AllReduceTree:
      return Algorithm::Tree;
    case Op::AllReduceCentral:
      return Algorithm::Centralized;
    case Op::AllReduceRecursiveDoubling:
      return Algorithm::RecursiveDoubling;
    case Op::AllReduceHalvingDoubling:
      return Algorithm::HalvingDoubling;
    default:
      return Algorithm::Direct;
  }
}

// Checks a result at a few positions (first, last, a middle one): value(rank_of_source, index).
// Inputs are v_r[i] = r + (i % 7), exact in F32.
bool result_ok(Op op, const Tensor& out, int world, std::int64_t n, int call) {
  const std::vector<std::int64_t> at = {0, n / 2, n - 1};
  auto element = [&](std::int64_t i) { return out.narrow(0, i, 1).item<float>(); };
  for (std::int64_t i : at) {
    const float pattern = static_cast<float>(i % 7);
    switch (op) {
      case Op::Broadcast:  // root = call % world
        if (element(i) != static_cast<float>(call % world) + pattern) return false;
        break;
      case Op::AllGather:
        for (int r = 0; r < world; ++r) {
          if (element(r * n + i) != static_cast<float>(r) + pattern) return false;
        }
        break;
      default:  // Sum over ranks
        if (element(i) != static_cast<float>(world * (world - 1) / 2) + world * pattern) {
          return false;
        }
    }
  }
  return true;
}

std::vector<float> input_values(int rank, std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<float>(rank + i % 7);
  return v;
}

struct RankReport {
  int completed = 0;
  bool wrong_value = false;
};

// One rank's loop: fresh buffers every call until the group fails (or `max_calls`).
RankReport rank_loop(Communicator& comm, Op op, std::int64_t n, int max_calls,
                     std::optional<std::chrono::milliseconds> timeout, int throw_after) {
  RankReport report;
  const int world = comm.world_size();
  const std::vector<float> values = input_values(comm.rank(), n);
  for (int call = 0; call < max_calls; ++call) {
    if (call == throw_after) {
      throw std::runtime_error("rank " + std::to_string(comm.rank()) + " failed on purpose");
    }
    CallOptions options;
    if (timeout) options.with_timeout(*timeout);
    Tensor out;
    {
      const Tensor in = Tensor::from_vector<float>(values, {n});  // a fresh buffer every call
      switch (op) {
        case Op::Broadcast:
          out = comm.broadcast(comm.rank() == call % world ? in : Tensor::zeros({n}), call % world,
                               options);
          break;
        case Op::AllGather:
          out = comm.all_gather(in, options);
          break;
        default:
          out = comm.all_reduce(in, ReduceOperation::Sum,
                                options.with_algorithm(algorithm_of(op), 2));
      }
    }
    if (!result_ok(op, out, world, n, call)) report.wrong_value = true;
    ++report.completed;
  }
  return report;
}

}  // namespace

TEST_CASE("Groups failing at random points of collectives end promptly with every buffer intact",
          "[collective][stress]") {
  std::mt19937 rng(20261201);
  constexpr int kIterations = 240;
  int failed_groups = 0;
  for (int it = 0; it < kIterations; ++it) {
    const Op op = kOps[rng() % std::size(kOps)];
    const Failure failure = kFailures[rng() % std::size(kFailures)];
    const int world = 2 + static_cast<int>(rng() % 3);
    // Small (256 B: the 64-element case of the original report) or large (4 MiB: 16 pieces).
    const std::int64_t n = rng() % 3 == 0 ? (std::int64_t{1} << 20) : 64;
    const auto delay = std::chrono::microseconds(rng() % 3000);
    const int victim = static_cast<int>(rng() % static_cast<unsigned>(world));
    const int throw_after = static_cast<int>(rng() % 4);
    INFO("iteration " << it << ": " << op_name(op) << ", world " << world << ", " << n * 4
                      << " bytes, failure " << static_cast<int>(failure) << ", victim " << victim);

    CommunicatorOptions options;
    options.timeout = 30s;  // a hang fails the test below instead of waiting 300 s
    options.determinism = Determinism::PerAlgorithm;  // HalvingDoubling may run
    std::vector<Communicator> comms = InProcessGroup::create(world, {}, options);
    const int max_calls = n > 64 ? 40 : 200;
    std::atomic<bool> stop{false};
    Clock::time_point aborted_at{};
    std::thread aborter;
    if (failure == Failure::OutsideAbort) {
      Communicator target = comms[static_cast<std::size_t>(victim)];  // a handle: shares the core
      aborter = std::thread([&, target]() mutable {
        const auto until = Clock::now() + delay;
        while (Clock::now() < until && !stop.load()) std::this_thread::yield();
        aborted_at = Clock::now();
        target.abort("stress test abort");
      });
    }
    const auto outcomes = testing::run_ranks(world, [&](int r) {
      Communicator comm = std::move(comms[static_cast<std::size_t>(r)]);
      std::optional<std::chrono::milliseconds> timeout;
      if (failure == Failure::ShortDeadline && r == victim) timeout = 1ms;
      const int throws = failure == Failure::ThrowingRank && r == victim ? throw_after : -1;
      try {
        return rank_loop(comm, op, n, max_calls, timeout, throws);
      } catch (...) {
        // Like ruccl::run_ranks: a rank that throws on its own aborts the others.
        if (!comm.finished()) comm.abort("rank " + std::to_string(r) + " threw");
        throw;
      }
    });
    const Clock::time_point ended = Clock::now();
    stop.store(true);
    if (aborter.joinable()) aborter.join();  // aborted_at is read only after the join
    // Promptness: ranks leave within a bound once an abort lands (generous: sanitizers, 4 ranks
    // on 2 cores; the design target is well under 100 ms).
    if (failure == Failure::OutsideAbort && ended > aborted_at) {
      REQUIRE(ended - aborted_at < 2s);
    }

    bool any_failed = false;
    for (int r = 0; r < world; ++r) {
      const auto& o = outcomes[static_cast<std::size_t>(r)];
      if (o.ok()) {
        REQUIRE_FALSE(o.value().wrong_value);
        continue;  // a short deadline can be met; an abort can come after the last call
      }
      any_failed = true;
      const auto kind = testing::error_kind(o);
      if (!kind) {  // only the throwing rank may end with something other than a CollectiveError
        REQUIRE(failure == Failure::ThrowingRank);
        REQUIRE(r == victim);
        continue;
      }
      const bool expected = *kind == CollectiveErrorKind::Aborted ||
                            *kind == CollectiveErrorKind::Timeout ||
                            *kind == CollectiveErrorKind::PeerLost;
      INFO("rank " << r << ": " << o.message());
      REQUIRE(expected);
    }
    if (any_failed) ++failed_groups;
  }
  // Most groups must really fail mid-stream (a test whose failures never happen proves nothing).
  REQUIRE(failed_groups > kIterations / 2);
}

TEST_CASE("reset_collective racing registered-API calls never frees a buffer a peer reads",
          "[collective][stress]") {
  std::mt19937 rng(7);
  constexpr int kIterations = 60;
  int reset_mid_stream = 0;
  for (int it = 0; it < kIterations; ++it) {
    const int world = 2 + static_cast<int>(rng() % 3);
    const std::int64_t n = rng() % 2 == 0 ? (std::int64_t{1} << 20) : 64;
    const bool use_broadcast = rng() % 2 == 0;
    const auto delay = std::chrono::microseconds(500 + rng() % 3000);
    INFO("iteration " << it << ": world " << world << ", " << n * 4 << " bytes, "
                      << (use_broadcast ? "broadcast" : "all_reduce ring"));
    const CollectiveConfig config = CollectiveConfig()
                                        .with_num_devices(world)
                                        .with_local_all_reduce_strategy(Strategy::ring())
                                        .with_timeout(30s);
    std::atomic<int> registered{0};
    std::thread resetter([&] {
      while (registered.load() < world) std::this_thread::yield();
      std::this_thread::sleep_for(delay);
      reset_collective();
    });
    const auto outcomes = testing::run_ranks(world, [&](int r) {
      const PeerId id(static_cast<std::uint32_t>(100 + r));
      register_peer(id, Device::cpu(), config);
      registered.fetch_add(1);
      const std::vector<float> values = input_values(r, n);
      int completed = 0;
      for (int call = 0; call < 100000; ++call) {
        const Tensor in = Tensor::from_vector<float>(values, {n});
        const Tensor out = use_broadcast
                               ? broadcast(id, r == 0 ? std::optional<Tensor>(in) : std::nullopt)
                               : all_reduce(id, in, ReduceOperation::Sum);
        const Op op = use_broadcast ? Op::Broadcast : Op::AllReduceRing;
        if (!result_ok(op, out, world, n, /*call=*/0)) return -1;
        ++completed;
      }
      return completed;
    });
    resetter.join();
    bool mid_stream = false;
    for (int r = 0; r < world; ++r) {
      const auto& o = outcomes[static_cast<std::size_t>(r)];
      INFO("rank " << r << ": " << o.message());
      REQUIRE_FALSE(o.ok());  // the loop only ends by the reset
      const auto kind = testing::error_kind(o);
      REQUIRE(kind.has_value());
      // In a call when the reset lands: Aborted; calling after it: MissingRegistration.
      REQUIRE((*kind == CollectiveErrorKind::Aborted ||
               *kind == CollectiveErrorKind::MissingRegistration));
      if (*kind == CollectiveErrorKind::Aborted) mid_stream = true;
    }
    if (mid_stream) ++reset_mid_stream;
  }
  REQUIRE(reset_mid_stream > kIterations / 2);
}

#ifdef RUCCL_SANITIZE
// ASan's shadow of 256 MiB and its checked copies slow every rank several times: measured on an
// idle machine, 55-120 ms from the abort to each rank's error (1-4 ms without instrumentation).
constexpr auto kAbortedBroadcastBound = std::chrono::milliseconds(300);
#else
constexpr auto kAbortedBroadcastBound = std::chrono::milliseconds(100);  // the target
#endif

TEST_CASE("A 256 MiB broadcast aborted mid-copy fails every rank within 100 ms",
          "[collective][slow][timing]") {
  // The receiver reads the root's buffer in place; the root must not free it while the receiver
  // copies, and the receiver must stop within a piece instead of finishing the whole copy.
  constexpr std::int64_t kFloats = std::int64_t{64} << 20;  // 256 MiB
  CommunicatorOptions options;
  options.timeout = 30s;
  std::vector<Communicator> comms = InProcessGroup::create(2, {}, options);
  const Tensor payload = Tensor::full({kFloats}, 3.0);
  std::atomic<int> started{0};
  Clock::time_point aborted_at{};
  std::vector<Clock::time_point> entered_at(2);
  std::vector<Clock::time_point> failed_at(2);
  Communicator root_handle = comms[0];
  std::thread aborter([&] {
    while (started.load() < 2) std::this_thread::yield();
    std::this_thread::sleep_for(
        5ms);  // both ranks are in the data phase by now, unless descheduled
    aborted_at = Clock::now();
    root_handle.abort("stop the broadcast");
  });
  const auto outcomes = testing::run_ranks(2, [&](int r) {
    Communicator comm = std::move(comms[static_cast<std::size_t>(r)]);
    const Tensor buffer = r == 0 ? payload : Tensor::empty({kFloats});
    entered_at[static_cast<std::size_t>(r)] = Clock::now();
    ++started;
    try {
      comm.broadcast(buffer, 0);
    } catch (const CollectiveError&) {
      failed_at[static_cast<std::size_t>(r)] = Clock::now();
      throw;
    }
  });
  aborter.join();
  for (int r = 0; r < 2; ++r) {
    const auto& o = outcomes[static_cast<std::size_t>(r)];
    INFO("rank " << r << ": " << o.message());
    if (o.ok()) continue;  // the copy may have finished before the abort on a fast machine
    REQUIRE(testing::error_kind(o) == CollectiveErrorKind::Aborted);
    // Promptness counts from the abort, or from the rank's call when a loaded machine let it
    // enter only after the abort (then it fails at entry).
    const auto from = std::max(aborted_at, entered_at[static_cast<std::size_t>(r)]);
    REQUIRE(failed_at[static_cast<std::size_t>(r)] - from < kAbortedBroadcastBound);
  }
}

}  // namespace ruccl
