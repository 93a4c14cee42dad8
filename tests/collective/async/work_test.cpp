// Asynchronous collectives (Communicator::*_async and Work): the coverage table through the async
// form with every call in flight and waited for last to first; many handles in flight; polling;
// program order with blocking calls; a failure, an abort and a killed rank while several calls
// are pending (every handle gets the error, promptly); deadlines counted from the *_async call.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "tests/collective/collective_test_support.h"
#include "tests/collective/coverage_table.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;
using namespace ruccl::testing::coverage;
using namespace std::chrono_literals;
using Kind = CollectiveErrorKind;

namespace {

CommunicatorOptions test_options() { return short_timeout(60s); }

/// One handle's outcome, read on its rank's thread (Catch2 asserts only on the main thread).
struct Outcome {
  std::optional<Kind> kind;  // nullopt: success
  std::vector<int> ranks;
  std::string message;
  Tensor value;
};

Outcome outcome_of(const Work& w) {
  Outcome o;
  try {
    o.value = w.result();
  } catch (const CollectiveError& e) {
    o.kind = e.kind();
    o.ranks = e.ranks();
    o.message = e.what();
  }
  return o;
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

}  // namespace

TEMPLATE_TEST_CASE(
    "every op of the coverage table gives the blocking result through its async form",
    "[collective][async]", RUCCL_GROUP_FACTORIES) {
  for (int world : {1, 2, 3, 5}) {
    std::vector<Call> calls;
    for (Op op : kAllOpsTable) {
      for (DType dtype : {DType::BF16, DType::F32, DType::I64}) {
        for (std::int64_t rows : {std::int64_t{0}, std::int64_t{3}, std::int64_t{257}}) {
          const int root = static_cast<int>(calls.size()) % world;
          const ReduceOperation rop =
              dtype == DType::I64 ? ReduceOperation::BitXor : ReduceOperation::Max;
          calls.push_back({op, dtype, rop, rows, 0, Layout::Contiguous, root});
        }
      }
      // A transposed input through every op too.
      calls.push_back({op, DType::F64, ReduceOperation::Mean, 2, 3, Layout::Transposed,
                       static_cast<int>(calls.size()) % world});
    }
    run_and_check(TestType::make, world, calls, test_options(), Mode::Async);
  }
}

TEMPLATE_TEST_CASE("many handles in flight complete in program order whatever the order of waits",
                   "[collective][async]", InProcess, InProcessCopying, TcpLoopback) {
  constexpr int kWorld = 3;
  constexpr int kCalls = 24;
  auto out = run_group_with(
      TestType::make, kWorld,
      [](Communicator& comm) {
        std::vector<Work> works;
        for (int k = 0; k < kCalls; ++k) {
          // The input is a temporary: the handle keeps it alive (ASan checks).
          works.push_back(comm.all_reduce_async(
              Tensor::full({k * 40 + 1}, static_cast<double>(comm.rank() + k), DType::F32)));
        }
        // Polled, never waited: the progress thread completes the last call by itself, and
        // the calls complete in the order they were started.
        const auto start = std::chrono::steady_clock::now();
        while (!works.back().is_completed() && elapsed_ms(start) < 30000) {
          std::this_thread::sleep_for(1ms);
        }
        bool all_completed = true;
        for (const Work& w : works) all_completed = all_completed && w.is_completed();
        std::vector<float> firsts(kCalls);
        for (int k : {5, 0,  23, 11, 17, 2,  1,  3,  4,  6,  7,  8,
                      9, 10, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22}) {
          firsts[static_cast<std::size_t>(k)] =
              works[static_cast<std::size_t>(k)].result().to_vector<float>().back();
        }
        const bool success = works[7].is_success() && works[7].exception() == nullptr;
        return std::make_tuple(all_completed, success, firsts, comm.has_progress_thread());
      },
      test_options());
  for (int r = 0; r < kWorld; ++r) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    const auto& [all_completed, success, firsts, has_thread] =
        out[static_cast<std::size_t>(r)].value();
    REQUIRE(all_completed);
    REQUIRE(success);
    REQUIRE(has_thread);
    for (int k = 0; k < kCalls; ++k) {
      REQUIRE(firsts[static_cast<std::size_t>(k)] == static_cast<float>(0 + 1 + 2 + 3 * k));
    }
  }
}

TEST_CASE(
    "a blocking call runs after the calls this rank started before it, with no thread until "
    "the first async call",
    "[collective][async]") {
  auto out = run_group(
      2,
      [](Communicator& comm) {
        const Tensor t = Tensor::full({5}, 1.0, DType::F64);
        comm.all_reduce(t);
        const bool thread_before = comm.has_progress_thread();
        Work first = comm.all_gather_async(t);
        Work second = comm.broadcast_async(t, 1);
        const Tensor sum = comm.all_reduce(t);  // queued behind both
        const bool both_done = first.is_completed() && second.is_completed();
        comm.barrier();
        return std::make_tuple(thread_before, both_done, sum.to_vector<double>()[0],
                               first.result().shape()[0]);
      },
      test_options());
  for (const auto& o : out) {
    INFO(o.message());
    const auto& [thread_before, both_done, sum, gathered] = o.value();
    REQUIRE_FALSE(thread_before);
    REQUIRE(both_done);
    REQUIRE(sum == 2.0);
    REQUIRE(gathered == 10);
  }
}

TEMPLATE_TEST_CASE(
    "a mismatch while several calls are pending fails every later handle on every rank",
    "[collective][async]", InProcess, InProcessCopying, TcpLoopback) {
  constexpr int kWorld = 3;
  auto out = run_group_with(
      TestType::make, kWorld,
      [](Communicator& comm) {
        std::vector<Work> works;
        works.push_back(comm.all_reduce_async(Tensor::ones({4}, DType::F32)));
        // Rank 1 passes F64 at call 2: a DTypeMismatch on every rank.
        works.push_back(
            comm.all_reduce_async(Tensor::ones({4}, comm.rank() == 1 ? DType::F64 : DType::F32)));
        works.push_back(comm.all_gather_async(Tensor::ones({300}, DType::F32)));
        works.push_back(comm.barrier_async());
        works.push_back(comm.reduce_scatter_async(Tensor::ones({3}, DType::F32)));
        std::vector<Outcome> outcomes;
        for (std::size_t k = works.size(); k-- > 0;)
          outcomes.insert(outcomes.begin(), outcome_of(works[k]));
        return outcomes;
      },
      test_options());
  for (int r = 0; r < kWorld; ++r) {
    const std::vector<Outcome>& o = out[static_cast<std::size_t>(r)].value();
    INFO("rank " << r);
    REQUIRE_FALSE(o[0].kind.has_value());
    REQUIRE(o[0].value.to_vector<float>() == std::vector<float>(4, 3.0f));
    REQUIRE(o[1].kind == Kind::DTypeMismatch);
    for (std::size_t k = 2; k < o.size(); ++k) {
      INFO("handle " << k << ": " << o[k].message);
      REQUIRE(o[k].kind == Kind::Aborted);
      REQUIRE(o[k].message.find("the communicator is finished") != std::string::npos);
    }
  }
}

TEST_CASE("abort wakes every pending handle promptly, on every rank", "[collective][async]") {
  constexpr int kWorld = 2;
  auto out = run_group(
      kWorld,
      [](Communicator& comm) {
        std::vector<Work> works;
        // Rank 1 starts fewer calls, so rank 0's later calls wait for a peer that never comes.
        const int calls = comm.rank() == 0 ? 4 : 1;
        for (int k = 0; k < calls; ++k) works.push_back(comm.all_reduce_async(Tensor::ones({8})));
        works.front().wait();
        if (comm.rank() == 1) {
          std::this_thread::sleep_for(50ms);  // rank 0's call 2 is blocked by now
          comm.abort("the test aborts");
        }
        const auto start = std::chrono::steady_clock::now();
        std::vector<Outcome> outcomes;
        for (const Work& w : works) outcomes.push_back(outcome_of(w));
        outcomes.push_back(outcome_of(comm.barrier_async()));  // after the abort
        return std::make_pair(outcomes, elapsed_ms(start));
      },
      test_options());
  for (int r = 0; r < kWorld; ++r) {
    const auto& [o, ms] = out[static_cast<std::size_t>(r)].value();
    INFO("rank " << r);
    REQUIRE_FALSE(o[0].kind.has_value());
    for (std::size_t k = 1; k < o.size(); ++k) {
      INFO("handle " << k << ": " << o[k].message);
      REQUIRE(o[k].kind == Kind::Aborted);
      REQUIRE(o[k].message.find("the test aborts") != std::string::npos);
    }
    REQUIRE(ms < 1000);  // deadline: 60 s
  }
}

TEST_CASE("a rank killed mid-flight fails every pending handle of the others with PeerLost",
          "[collective][async][fault]") {
  constexpr int kWorld = 3;
  for (bool copying : {false, true}) {
    // Rank 2 dies at its third call (in its progress thread, with calls queued behind it).
    auto make = [copying](int world, CommunicatorOptions options) {
      return in_process_group_with_faults(
          world, options,
          [](int r) {
            FaultPlan plan;
            if (r == 2) plan.add(FaultRule::on_call(FaultAction::KillRank, 2));
            return plan;
          },
          copying);
    };
    auto out = run_group_with(
        make, kWorld,
        [](Communicator& comm) {
          const auto start = std::chrono::steady_clock::now();
          std::vector<Work> works;
          for (int k = 0; k < 6; ++k) {
            works.push_back(comm.all_reduce_async(Tensor::full({257}, 1.0, DType::F64)));
          }
          std::vector<Outcome> outcomes;
          for (const Work& w : works) outcomes.push_back(outcome_of(w));
          return std::make_pair(outcomes, elapsed_ms(start));
        },
        test_options());
    bool peer_lost_seen = false;  // by the rank that failed the group first
    for (int r = 0; r < kWorld; ++r) {
      const auto& [o, ms] = out[static_cast<std::size_t>(r)].value();
      INFO((copying ? "copying, " : "") << "rank " << r);
      // Rank 2 finished calls 0 and 1 before it died; the others may still have been receiving
      // its part of them (its copies die with it): a prefix of successes, then failures only.
      std::size_t first_failure = 0;
      while (first_failure < o.size() && !o[first_failure].kind.has_value()) {
        REQUIRE(o[first_failure].value.to_vector<double>()[256] == 3.0);
        ++first_failure;
      }
      REQUIRE(first_failure <= 2);
      if (r == 2) REQUIRE(first_failure == 2);
      for (std::size_t k = first_failure; k < o.size(); ++k) {
        INFO("handle " << k << ": " << o[k].message);
        if (r == 2) {
          REQUIRE(o[k].kind == Kind::Aborted);
        } else {
          // PeerLost, or Aborted naming it when another rank failed the group first.
          REQUIRE((o[k].kind == Kind::PeerLost || o[k].kind == Kind::Aborted));
          peer_lost_seen = peer_lost_seen || o[k].kind == Kind::PeerLost;
          REQUIRE(o[k].ranks == std::vector<int>{2});
          REQUIRE(o[k].message.find("lost rank") != std::string::npos);
        }
      }
      if (r == 2) REQUIRE(o[2].message.find("killed by its fault plan") != std::string::npos);
      REQUIRE(ms < 1000);  // deadline: 60 s
    }
    REQUIRE(peer_lost_seen);
  }
}

TEST_CASE("an async call's deadline counts from the call and its timeout names the missing rank",
          "[collective][async]") {
  auto out = run_group(
      2,
      [](Communicator& comm) -> Outcome {
        if (comm.rank() == 1) {  // never calls (and stays, so rank 0 times out: not PeerLost)
          std::this_thread::sleep_for(600ms);
          return {};
        }
        Work w = comm.all_reduce_async(Tensor::ones({3}), ReduceOperation::Sum,
                                       CallOptions{}.with_timeout(150ms));
        return outcome_of(w);
      },
      test_options());
  const Outcome& o = out[0].value();
  INFO(o.message);
  REQUIRE(o.kind == Kind::Timeout);
  REQUIRE(o.ranks == std::vector<int>{1});
}

TEST_CASE("an empty Work handle is completed and raises InvalidArgument on wait",
          "[collective][async]") {
  const Work w;
  REQUIRE(w.is_completed());
  REQUIRE_FALSE(w.is_success());
  REQUIRE(w.exception() == nullptr);
  REQUIRE_THROWS_AS(w.wait(), CollectiveError);
  REQUIRE_THROWS_WITH(w.result(), Catch::Contains("expected a handle returned by a *_async call"));
}
