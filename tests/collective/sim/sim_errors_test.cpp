// Failures in the simulated world: a rank that dies (its communicator destroyed mid-job) fails
// every other rank with PeerLost naming it, up to 1024 ranks; a rank that never calls times out
// naming it; calls that can never match fail at once (the world sees every rank wait); a
// disagreement is the core's error on every rank; a bad model is InvalidConfig.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <thread>

#include "tests/collective/sim/sim_factory.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

CommunicatorOptions with_timeout(std::chrono::milliseconds timeout) {
  CommunicatorOptions o;
  o.timeout = timeout;
  return o;
}

// Every rank all-reduces twice; rank `dead` returns after the first call (its communicator is
// destroyed). Returns each rank's error kind of the second call (nullopt: it completed) and
// of a call after it.
struct Outcome {
  std::optional<CollectiveErrorKind> second, after;
  std::vector<int> ranks;
};
std::vector<Outcome> one_rank_dies(int world, int dead) {
  auto out = run_group_with(
      Simulated::make, world,
      [&](Communicator& comm) {
        Outcome o;
        comm.all_reduce(Tensor::ones({3}, DType::F32));
        if (comm.rank() == dead) return o;
        try {
          comm.all_reduce(Tensor::ones({3}, DType::F32));
        } catch (const CollectiveError& e) {
          o.second = e.kind();
          o.ranks = e.ranks();
        }
        try {
          comm.barrier();
        } catch (const CollectiveError& e) {
          o.after = e.kind();
        }
        return o;
      },
      with_timeout(std::chrono::seconds(120)));
  std::vector<Outcome> outcomes;
  for (auto& o : out) outcomes.push_back(o.value());
  return outcomes;
}

void check_dead(int world, int dead) {
  const std::vector<Outcome> got = one_rank_dies(world, dead);
  for (int r = 0; r < world; ++r) {
    if (r == dead) continue;
    INFO("world " << world << ", rank " << r);
    const Outcome& o = got[static_cast<std::size_t>(r)];
    REQUIRE(o.second.has_value());
    // The first rank to find it loses the dead rank (PeerLost naming it); the failure it records
    // is what every other rank throws.
    REQUIRE(*o.second == CollectiveErrorKind::PeerLost);
    REQUIRE(o.ranks == std::vector<int>{dead});
    REQUIRE(o.after == CollectiveErrorKind::Aborted);
  }
}

}  // namespace

TEST_CASE("a rank that dies fails every other simulated rank with PeerLost naming it", "[sim]") {
  check_dead(2, 1);
  check_dead(5, 0);
  check_dead(37, 20);
}

TEST_CASE("a rank that dies among 1024 simulated ranks fails all the others", "[sim][slow]") {
  check_dead(1024, 700);
}

TEST_CASE("a simulated rank that never calls times out naming it", "[sim]") {
  constexpr int kWorld = 9;
  const auto start = std::chrono::steady_clock::now();
  auto out = run_group_with(
      Simulated::make, kWorld,
      [&](Communicator& comm) {
        if (comm.rank() == 4) {  // alive, but never calls
          std::this_thread::sleep_for(std::chrono::milliseconds(600));
          return;
        }
        comm.all_reduce(Tensor::ones({2}, DType::F64));
      },
      with_timeout(std::chrono::milliseconds(200)));
  for (int r = 0; r < kWorld; ++r) {
    if (r == 4) continue;
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == CollectiveErrorKind::Timeout);
    REQUIRE(out[static_cast<std::size_t>(r)].message().find("[4]") != std::string::npos);
  }
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("simulated calls that can never match fail at once, not at the deadline", "[sim]") {
  // Both ranks receive from each other: every live rank waits, nothing can ever arrive.
  const auto start = std::chrono::steady_clock::now();
  auto out = run_group_with(
      Simulated::make, 2, [&](Communicator& comm) { comm.recv(1 - comm.rank()); },
      with_timeout(std::chrono::seconds(120)));
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == CollectiveErrorKind::Timeout);
    REQUIRE(out[static_cast<std::size_t>(r)].message().find("can never move again") !=
            std::string::npos);
  }
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("a disagreement among 300 simulated ranks is ShapeMismatch on every rank", "[sim]") {
  constexpr int kWorld = 300;
  auto out = run_group_with(
      Simulated::make, kWorld,
      [&](Communicator& comm) {
        comm.all_reduce(Tensor::ones({comm.rank() == 299 ? 3 : 2}, DType::F32));
      },
      with_timeout(std::chrono::seconds(120)));
  for (int r = 0; r < kWorld; ++r) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == CollectiveErrorKind::ShapeMismatch);
  }
}

TEST_CASE("every disagreement among 257 simulated ranks is its own kind on every rank", "[sim]") {
  // Rank 200 differs from the others in one argument per case; then the group is finished.
  struct Case {
    const char* what;
    CollectiveErrorKind kind;
    std::function<void(Communicator&, bool odd)> call;
  };
  const std::vector<Case> cases = {
      {"kind", CollectiveErrorKind::CollectiveKindMismatch,
       [](Communicator& c, bool odd) {
         const Tensor t = Tensor::ones({2}, DType::F32);
         if (odd)
           c.broadcast(t, 0);
         else
           c.all_reduce(t);
       }},
      {"dtype", CollectiveErrorKind::DTypeMismatch,
       [](Communicator& c, bool odd) {
         c.all_reduce(Tensor::ones({2}, odd ? DType::F64 : DType::F32));
       }},
      {"reduce operation", CollectiveErrorKind::ReduceOperationMismatch,
       [](Communicator& c, bool odd) {
         c.all_reduce(Tensor::ones({2}, DType::F32),
                      odd ? ReduceOperation::Max : ReduceOperation::Sum);
       }},
      {"root", CollectiveErrorKind::RootMismatch,
       [](Communicator& c, bool odd) { c.broadcast(Tensor::ones({2}, DType::F32), odd ? 5 : 0); }},
      {"root out of range", CollectiveErrorKind::InvalidArgument,
       [](Communicator& c, bool) { c.reduce(Tensor::ones({2}, DType::F32), 257); }},
  };
  constexpr int kWorld = 257;
  for (const Case& k : cases) {
    std::vector<std::optional<CollectiveErrorKind>> after(kWorld);
    auto out = run_group_with(
        Simulated::make, kWorld,
        [&](Communicator& comm) {
          try {
            k.call(comm, comm.rank() == 200);
          } catch (const CollectiveError&) {
            try {
              comm.barrier();
            } catch (const CollectiveError& e) {
              after[static_cast<std::size_t>(comm.rank())] = e.kind();
            }
            throw;
          }
        },
        with_timeout(std::chrono::seconds(120)));
    for (int r = 0; r < kWorld; ++r) {
      INFO(k.what << ", rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
      REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == k.kind);
      REQUIRE(after[static_cast<std::size_t>(r)] == CollectiveErrorKind::Aborted);
    }
  }
}

TEST_CASE("SimGroup::create rejects a bad world size, model or options", "[sim]") {
  auto kind_of = [](auto&& make) -> std::optional<CollectiveErrorKind> {
    try {
      make();
    } catch (const CollectiveError& e) {
      return e.kind();
    }
    return std::nullopt;
  };
  LinkModel no_hosts;
  no_hosts.ranks_per_host = 0;
  LinkModel no_bandwidth;
  no_bandwidth.in_switch.bytes_per_s = 0;
  CommunicatorOptions bad_options;
  bad_options.segment_bytes = 100;  // not a multiple of 64
  REQUIRE(kind_of([] { SimGroup::create(0, LinkModel{}, SimMode::Checking); }) ==
          CollectiveErrorKind::InvalidConfig);
  REQUIRE(kind_of([&] { SimGroup::create(4, no_hosts, SimMode::Checking); }) ==
          CollectiveErrorKind::InvalidConfig);
  REQUIRE(kind_of([&] { SimGroup::create(4, no_bandwidth, SimMode::Timing); }) ==
          CollectiveErrorKind::InvalidConfig);
  REQUIRE(kind_of([&] { SimGroup::create(4, LinkModel{}, SimMode::Checking, bad_options); }) ==
          CollectiveErrorKind::InvalidConfig);
}
