// Arguments the type system lets through (enum values cast from integers), and error messages:
// an agreement error reads the same on every rank, and the registered session API names the
// PeerIds its callers chose, never rank indices.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "tests/collective/collective_test_support.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;
using Kind = CollectiveErrorKind;
using namespace std::chrono_literals;

namespace {

const ReduceOperation kBadOp = static_cast<ReduceOperation>(42);
const Algorithm kBadAlgorithm = static_cast<Algorithm>(9);

struct ResetGuard {
  ~ResetGuard() { reset_collective(); }
};

}  // namespace

TEMPLATE_TEST_CASE("A ReduceOperation that is no enumerator is InvalidArgument on every rank",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  const Tensor x = Tensor::full({5}, 1.0);
  auto check = [](const auto& out, const char* what) {
    for (std::size_t r = 0; r < out.size(); ++r) {
      INFO(what << ", rank " << r << ": " << out[r].message());
      REQUIRE(error_kind(out[r]) == Kind::InvalidArgument);
      REQUIRE(out[r].message().find("got ReduceOperation(42)") != std::string::npos);
    }
  };
  check(run_group_with(
            TestType::make, 3, [&](Communicator& comm) { comm.all_reduce(x, kBadOp); },
            short_timeout()),
        "all_reduce, every rank");
  // One rank alone passes it: its local error reaches the others.
  check(run_group_with(
            TestType::make, 3,
            [&](Communicator& comm) {
              comm.all_reduce(x, comm.rank() == 1 ? kBadOp : ReduceOperation::Sum);
            },
            short_timeout()),
        "all_reduce, rank 1");
  check(run_group_with(
            TestType::make, 2, [&](Communicator& comm) { comm.reduce(x, 0, kBadOp); },
            short_timeout()),
        "reduce");
  check(run_group_with(
            TestType::make, 2,
            [&](Communicator& comm) { comm.reduce_scatter(Tensor::zeros({4}), kBadOp); },
            short_timeout()),
        "reduce_scatter");
}

TEMPLATE_TEST_CASE("ReduceOperation(255) is InvalidArgument, not taken for no operation",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  auto out = run_group_with(
      TestType::make, 2,
      [](Communicator& comm) {
        comm.all_reduce(Tensor::full({3}, 1.0), static_cast<ReduceOperation>(255));
      },
      short_timeout());
  for (const auto& o : out) {
    INFO(o.message());
    REQUIRE(error_kind(o) == Kind::InvalidArgument);
    REQUIRE(o.message().find("got ReduceOperation(255)") != std::string::npos);
  }
}

TEMPLATE_TEST_CASE("An Algorithm that is no enumerator is InvalidArgument on every rank",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  for (int bad_rank : {-1, 0}) {  // -1: every rank passes it
    auto out = run_group_with(
        TestType::make, 3,
        [&](Communicator& comm) {
          CallOptions call;
          if (bad_rank < 0 || comm.rank() == bad_rank) call.with_algorithm(kBadAlgorithm);
          comm.all_reduce(Tensor::full({4}, 1.0), ReduceOperation::Sum, call);
        },
        short_timeout());
    for (std::size_t r = 0; r < out.size(); ++r) {
      INFO("bad on " << bad_rank << ", rank " << r << ": " << out[r].message());
      REQUIRE(error_kind(out[r]) == Kind::InvalidArgument);
      REQUIRE(out[r].message().find("got Algorithm(9)") != std::string::npos);
    }
  }
  // As a group default it is refused when the group is made.
  CommunicatorOptions o;
  o.broadcast_algorithm = kBadAlgorithm;
  try {
    TestType::make(2, o);
    FAIL("expected InvalidConfig");
  } catch (const CollectiveError& e) {
    REQUIRE(e.kind() == Kind::InvalidConfig);
    REQUIRE(std::string(e.what()).find("got Algorithm(9)") != std::string::npos);
  }
}

TEMPLATE_TEST_CASE("An agreement error carries the same message on every rank", "[collective]",
                   RUCCL_GROUP_FACTORIES) {
  auto same_everywhere = [](const auto& out, Kind kind) {
    for (std::size_t r = 0; r < out.size(); ++r) {
      INFO("rank " << r << ": " << out[r].message());
      REQUIRE(error_kind(out[r]) == kind);
      REQUIRE(out[r].message() == out[0].message());
    }
  };
  SECTION("different collectives (each rank's label differs)") {
    auto out = run_group_with(
        TestType::make, 2,
        [](Communicator& comm) {
          if (comm.rank() == 0) {
            comm.all_reduce(Tensor::full({2}, 1.0));
          } else {
            comm.all_gather(Tensor::full({2}, 1.0));
          }
        },
        short_timeout());
    same_everywhere(out, Kind::CollectiveKindMismatch);
    REQUIRE(out[0].message().rfind("call #1: ", 0) == 0);
    REQUIRE(out[0].message().find("rank 0 has called all_reduce, rank 1 has called all_gather") !=
            std::string::npos);
  }
  SECTION("different shapes under one label") {
    auto out = run_group_with(
        TestType::make, 3,
        [](Communicator& comm) { comm.all_reduce(Tensor::full({comm.rank() == 2 ? 3 : 2}, 1.0)); },
        short_timeout());
    same_everywhere(out, Kind::ShapeMismatch);
    REQUIRE(out[0].message().rfind("all_reduce (call #1): ", 0) == 0);
  }
  SECTION("custom labels that differ between ranks") {
    auto out = run_group_with(
        TestType::make, 2,
        [](Communicator& comm) {
          comm.all_reduce(Tensor::full({comm.rank() + 1}, 1.0), ReduceOperation::Sum,
                          CallOptions().with_label(comm.rank() == 0 ? "grads" : "loss"));
        },
        short_timeout());
    same_everywhere(out, Kind::ShapeMismatch);
    REQUIRE(out[0].message().rfind("call #1: ", 0) == 0);
  }
  SECTION("fingerprint words named differently on each rank") {
    auto out = run_group_with(
        TestType::make, 2,
        [](Communicator& comm) {
          comm.all_gather(Tensor::full({2}, 1.0),
                          CallOptions().with_word(comm.rank() == 0 ? "axis" : "dim", comm.rank()));
        },
        short_timeout());
    same_everywhere(out, Kind::ArgumentMismatch);
    REQUIRE(out[0].message().find("argument 'axis'") != std::string::npos);
  }
  SECTION("one rank's invalid argument") {
    auto out = run_group_with(
        TestType::make, 3,
        [](Communicator& comm) { comm.broadcast(Tensor::zeros({2}), comm.rank() == 1 ? 5 : 0); },
        short_timeout());
    // Rank 1's bad root: a local error, and the other ranks disagree with it on the root.
    for (std::size_t r = 0; r < out.size(); ++r) {
      INFO("rank " << r << ": " << out[r].message());
      REQUIRE(out[r].message() == out[0].message());
    }
  }
}

TEST_CASE("Registered-API errors name the callers' PeerIds, not rank indices", "[collective]") {
  ResetGuard guard;
  const CollectiveConfig config = CollectiveConfig().with_num_devices(3).with_timeout(200ms);
  SECTION("a deadline names the peer that never arrived") {
    auto out = run_ranks(3, [&](int i) {
      const PeerId id(static_cast<std::uint32_t>(7 + 2 * i));  // 7, 9, 11: ranks 0, 1, 2
      register_peer(id, Device::cpu(), config);
      if (i == 2) std::this_thread::sleep_for(600ms);
      Tensor t = all_reduce(id, Tensor::full({2}, 1.0), ReduceOperation::Sum);
      finish_collective(id);
      return t;
    });
    for (int i : {0, 1}) {
      const auto& o = out[static_cast<std::size_t>(i)];
      INFO(o.message());
      REQUIRE(error_kind(o) == Kind::Timeout);
      REQUIRE(o.message().find("peer(s) [11]") != std::string::npos);
      REQUIRE(o.message().find("rank") == std::string::npos);
    }
  }
  SECTION("a mismatch names the disagreeing peers") {
    auto out = run_ranks(3, [&](int i) {
      const PeerId id(static_cast<std::uint32_t>(7 + 2 * i));
      register_peer(id, Device::cpu(), config.with_timeout(10s));
      all_reduce(id, Tensor::full({i == 1 ? 3 : 2}, 1.0), ReduceOperation::Sum);
    });
    for (const auto& o : out) {
      INFO(o.message());
      REQUIRE(error_kind(o) == Kind::ShapeMismatch);
      REQUIRE(o.message().find("peer 7 has [2], peer 9 has [3]") != std::string::npos);
      REQUIRE(o.message().find("rank") == std::string::npos);
    }
  }
}
