// Every CollectiveError kind of the Communicator, provoked on purpose and seen on every rank;
// deadlines, abort, lost peers and the finished state.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "collective/algorithms/selection.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;
using Kind = CollectiveErrorKind;
using namespace std::chrono_literals;

namespace {

// Every rank threw a CollectiveError of `kind`.
template <typename T>
void require_all(const std::vector<RankOutcome<T>>& out, Kind kind) {
  for (std::size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r << ": " << out[r].message());
    REQUIRE(error_kind(out[r]) == kind);
  }
}

// Runs `call(comm)` once on every rank of a group of `world` and expects `kind` everywhere, then
// expects every rank's next call to raise Aborted (the group is finished).
template <typename Call>
std::vector<RankOutcome<std::monostate>> provoke(const GroupFactory& make, int world, Call call,
                                                 Kind kind) {
  std::vector<std::string> after(static_cast<std::size_t>(world));
  std::vector<std::optional<Kind>> after_kind(static_cast<std::size_t>(world));
  auto out = run_group_with(
      make, world,
      [&](Communicator& comm) {
        try {
          call(comm);
        } catch (const CollectiveError&) {
          try {
            comm.barrier();
          } catch (const CollectiveError& e) {
            after_kind[static_cast<std::size_t>(comm.rank())] = e.kind();
          }
          throw;
        }
      },
      short_timeout());
  require_all(out, kind);
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r << " after the error");
    REQUIRE(after_kind[static_cast<std::size_t>(r)] == Kind::Aborted);
  }
  return out;
}

Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>(v); }

}  // namespace

TEMPLATE_TEST_CASE("disagreeing collectives raise the matching error kind on every rank",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  SECTION("different collectives") {
    auto out = provoke(
        TestType::make, 3,
        [](Communicator& c) {
          if (c.rank() == 1)
            c.broadcast(f32({1}), 0);
          else
            c.all_reduce(f32({1}));
        },
        Kind::CollectiveKindMismatch);
    REQUIRE(error_ranks(out[0]) == std::vector<int>{0, 1});
    REQUIRE(out[2].message().find("rank 1 has called broadcast") != std::string::npos);
  }
  SECTION("shapes") {
    auto out = provoke(
        TestType::make, 2,
        [](Communicator& c) {
          c.all_reduce(c.rank() == 0 ? f32({1, 2}) : f32({1, 2, 3}));
        },
        Kind::ShapeMismatch);
    REQUIRE(out[1].message().find("rank 0 has [2], rank 1 has [3]") != std::string::npos);
  }
  SECTION("shapes of all_gather") {
    provoke(
        TestType::make, 3,
        [](Communicator& c) {
          c.all_gather(Tensor::zeros({c.rank() == 2 ? 2 : 1, 2}));
        },
        Kind::ShapeMismatch);
  }
  SECTION("dtypes") {
    provoke(
        TestType::make, 2,
        [](Communicator& c) {
          c.all_reduce(Tensor::zeros({4}, c.rank() == 0 ? DType::F32 : DType::F64));
        },
        Kind::DTypeMismatch);
  }
  SECTION("reduce operations") {
    provoke(
        TestType::make, 4,
        [](Communicator& c) {
          c.all_reduce(f32({1}), c.rank() == 3 ? ReduceOperation::Max : ReduceOperation::Sum);
        },
        Kind::ReduceOperationMismatch);
  }
  SECTION("roots") {
    provoke(
        TestType::make, 3, [](Communicator& c) { c.broadcast(f32({1}), c.rank() == 0 ? 0 : 1); },
        Kind::RootMismatch);
  }
  SECTION("higher-layer fingerprint words") {
    auto out = provoke(
        TestType::make, 2,
        [](Communicator& c) {
          c.all_gather(f32({1}),
                       CallOptions().with_word("axis", 1).with_word("requires_grad", c.rank()));
        },
        Kind::ArgumentMismatch);
    REQUIRE(out[0].message().find("'requires_grad'") != std::string::npos);
  }
  SECTION("per-call algorithms") {
    provoke(
        TestType::make, 2,
        [](Communicator& c) {
          c.all_reduce(
              f32({1}), ReduceOperation::Sum,
              CallOptions().with_algorithm(c.rank() == 0 ? Algorithm::Ring : Algorithm::Direct));
        },
        Kind::ArgumentMismatch);
  }
  SECTION("no broadcast sender") {
    provoke(
        TestType::make, 3, [](Communicator& c) { c.broadcast_from_sender(std::nullopt); },
        Kind::NoBroadcastSender);
  }
  SECTION("several broadcast senders") {
    auto out = provoke(
        TestType::make, 3,
        [](Communicator& c) {
          c.broadcast_from_sender(c.rank() == 1 ? std::nullopt : std::optional<Tensor>(f32({1})));
        },
        Kind::SeveralBroadcastSenders);
    REQUIRE(error_ranks(out[1]) == std::vector<int>{0, 2});
  }
}

TEMPLATE_TEST_CASE("invalid arguments on one rank raise InvalidArgument on every rank",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  SECTION("root out of range") {
    auto out = provoke(
        TestType::make, 2, [](Communicator& c) { c.reduce(f32({1}), c.rank() == 0 ? 2 : 0); },
        Kind::InvalidArgument);
    REQUIRE(out[1].message().find("expected a root in [0, 2), got 2") != std::string::npos);
  }
  SECTION("reduce_scatter axis 0 not divisible: [3, 2] on 2 ranks") {
    provoke(
        TestType::make, 2,
        [](Communicator& c) {
          c.reduce_scatter(Tensor::zeros({3, 2}));
        },
        Kind::InvalidArgument);
  }
  SECTION("Mean of integers") {
    provoke(
        TestType::make, 2,
        [](Communicator& c) {
          c.all_reduce(Tensor::zeros({2}, DType::I32), ReduceOperation::Mean);
        },
        Kind::InvalidArgument);
  }
  SECTION("bitwise operations on floats") {
    for (ReduceOperation op :
         {ReduceOperation::BitAnd, ReduceOperation::BitOr, ReduceOperation::BitXor}) {
      provoke(
          TestType::make, 2, [op](Communicator& c) { c.all_reduce(f32({1}), op); },
          Kind::InvalidArgument);
    }
  }
  SECTION("Bool tensors cannot be reduced") {
    provoke(
        TestType::make, 2, [](Communicator& c) { c.all_reduce(Tensor::zeros({2}, DType::Bool)); },
        Kind::InvalidArgument);
  }
  SECTION("an undefined input on one rank") {
    provoke(
        TestType::make, 3,
        [](Communicator& c) { c.all_reduce(c.rank() == 1 ? Tensor() : f32({1})); },
        Kind::InvalidArgument);
  }
  SECTION("scatter with root's axis 0 not divisible") {
    provoke(
        TestType::make, 2,
        [](Communicator& c) {
          c.scatter(c.rank() == 0 ? f32({1, 2, 3}) : Tensor(), 0);
        },
        Kind::InvalidArgument);
  }
  SECTION("all_to_all_v counts that do not sum to axis 0") {
    provoke(
        TestType::make, 2,
        [](Communicator& c) {
          const std::vector<std::int64_t> counts = {1, c.rank() == 0 ? 2 : 1};
          c.all_to_all_v(f32({1, 2}), counts);
        },
        Kind::InvalidArgument);
  }
  SECTION("too many fingerprint words") {
    provoke(
        TestType::make, 2,
        [](Communicator& c) {
          CallOptions call;
          for (int i = 0; i < 5; ++i) call.with_word("w", i);
          c.barrier(call);
        },
        Kind::InvalidArgument);
  }
}

TEMPLATE_TEST_CASE("a bad group configuration raises InvalidConfig", "[collective]",
                   RUCCL_GROUP_FACTORIES) {
  auto kind_of = [](auto fn) -> std::optional<Kind> {
    try {
      fn();
    } catch (const CollectiveError& e) {
      return e.kind();
    }
    return std::nullopt;
  };
  REQUIRE(kind_of([] { TestType::make(0, {}); }) == Kind::InvalidConfig);
  REQUIRE(kind_of([] { InProcessGroup::create(2, {Device::cpu()}); }) == Kind::InvalidConfig);
  CommunicatorOptions o;
  o.tree_arity = 1;
  REQUIRE(kind_of([&] { TestType::make(2, o); }) == Kind::InvalidConfig);
  o = CommunicatorOptions();
  o.timeout = 0ms;
  REQUIRE(kind_of([&] { TestType::make(2, o); }) == Kind::InvalidConfig);
  REQUIRE(kind_of([] { Communicator().barrier(); }) == Kind::InvalidArgument);
  for (std::size_t bad : {std::size_t{0}, std::size_t{100}, std::size_t{32}}) {
    o = CommunicatorOptions();
    o.segment_bytes = bad;
    std::string message;
    try {
      TestType::make(2, o);
    } catch (const CollectiveError& e) {
      REQUIRE(e.kind() == Kind::InvalidConfig);
      message = e.what();
    }
    INFO(message);
    REQUIRE(message.find("expected segment_bytes > 0 and a multiple of 64, got " +
                         std::to_string(bad)) != std::string::npos);
  }
}

TEST_CASE("Auto picks Direct in process and Ring at the threshold on a copying transport",
          "[collective]") {
  CommunicatorOptions o;
  o.ring_threshold_bytes = 1000;
  for (OpKind kind : {OpKind::AllReduce, OpKind::Reduce, OpKind::Broadcast}) {
    REQUIRE(auto_algorithm(kind, 1 << 30, LinkKind::InProcess, o) == Algorithm::Direct);
    REQUIRE(auto_algorithm(kind, 999, LinkKind::Copying, o) == Algorithm::Direct);
    REQUIRE(auto_algorithm(kind, 1000, LinkKind::Copying, o) == Algorithm::Ring);
  }
}

TEMPLATE_TEST_CASE("a deadline that expires names the ranks that never arrived", "[collective]",
                   RUCCL_GROUP_FACTORIES) {
  auto out = run_group_with(
      TestType::make, 4,
      [](Communicator& comm) {
        if (comm.rank() == 2) {
          std::this_thread::sleep_for(300ms);  // arrives after the others gave up
          comm.all_reduce(f32({1}));
          return;
        }
        comm.all_reduce(f32({1}), ReduceOperation::Sum, CallOptions().with_timeout(50ms));
      },
      short_timeout(10s));
  for (int r : {0, 1, 3}) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == Kind::Timeout);
    REQUIRE(error_ranks(out[static_cast<std::size_t>(r)]) == std::vector<int>{2});
    REQUIRE(out[static_cast<std::size_t>(r)].message().find("[2]") != std::string::npos);
  }
  // The late rank finds the group finished, with the timeout's reason.
  REQUIRE(error_kind(out[2]) == Kind::Aborted);
  REQUIRE(out[2].message().find("timed out") != std::string::npos);
}

TEMPLATE_TEST_CASE("abort makes pending calls on every rank fail within 100 ms with the reason",
                   "[collective][timing]", RUCCL_GROUP_FACTORIES) {
  std::atomic<long long> aborted_at{0};
  std::vector<long long> failed_at(4, 0);
  auto now_us = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  auto out = run_group_with(
      TestType::make, 4,
      [&](Communicator& comm) {
        if (comm.rank() == 3) {
          std::this_thread::sleep_for(150ms);  // the others are blocked (and asleep) by now
          aborted_at = now_us();
          comm.abort("the operator pressed stop");
        }
        try {
          comm.all_reduce(f32({1}));
        } catch (const CollectiveError&) {
          failed_at[static_cast<std::size_t>(comm.rank())] = now_us();
          throw;
        }
      },
      short_timeout(30s));
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == Kind::Aborted);
    REQUIRE(out[static_cast<std::size_t>(r)].message().find("the operator pressed stop") !=
            std::string::npos);
    if (r != 3) REQUIRE(failed_at[static_cast<std::size_t>(r)] - aborted_at.load() < 100000);
  }
}

TEMPLATE_TEST_CASE("abort with an error makes pending calls on every rank raise that error",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  auto out = run_group_with(
      TestType::make, 3,
      [&](Communicator& comm) {
        if (comm.rank() == 2) {
          std::this_thread::sleep_for(100ms);  // the others are waiting by now
          comm.abort(
              CollectiveError(Kind::ShapeMismatch, "node 1 has [3], node 0 has [2]", {0, 1}));
        }
        comm.all_reduce(f32({1}));
      },
      short_timeout(30s));
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    const bool in_call = error_kind(out[static_cast<std::size_t>(r)]) == Kind::ShapeMismatch;
    // Rank 2 calls after its own abort: the group is finished, naming the cause.
    const bool after = r == 2 && error_kind(out[static_cast<std::size_t>(r)]) == Kind::Aborted;
    REQUIRE((in_call || after));
    REQUIRE(out[static_cast<std::size_t>(r)].message().find("node 1 has [3], node 0 has [2]") !=
            std::string::npos);
    REQUIRE(error_ranks(out[static_cast<std::size_t>(r)]) == std::vector<int>{0, 1});
  }
}

TEMPLATE_TEST_CASE("a rank whose communicator is destroyed makes waiting peers fail with PeerLost",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  const auto start = std::chrono::steady_clock::now();
  auto out = run_group_with(
      TestType::make, 3,
      [](Communicator& comm) {
        if (comm.rank() == 1) {
          comm.barrier();
          std::this_thread::sleep_for(20ms);
          comm = Communicator();  // leaves without the second barrier
          return;
        }
        comm.barrier();
        comm.barrier();
      },
      short_timeout(30s));
  REQUIRE(std::chrono::steady_clock::now() - start < 5s);  // well before the 30 s deadline
  REQUIRE(out[1].ok());
  for (int r : {0, 2}) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == Kind::PeerLost);
    REQUIRE(error_ranks(out[static_cast<std::size_t>(r)]) == std::vector<int>{1});
  }
}

TEMPLATE_TEST_CASE("a rank leaving after its last call does not disturb the others", "[collective]",
                   RUCCL_GROUP_FACTORIES) {
  // Rank 0 returns as soon as its broadcast is done; the others still read its data safely.
  for (int i = 0; i < 20; ++i) {
    auto out = run_group_with(TestType::make, 4, [](Communicator& comm) {
      return comm.broadcast(Tensor::full({1000}, 7.0), 0);
    });
    for (auto& o : out)
      REQUIRE(o.value().template to_vector<float>() == std::vector<float>(1000, 7.0f));
  }
}
