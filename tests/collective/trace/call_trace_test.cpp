// The trace and statistics of real calls, on every transport: a known sequence of calls is in the
// trace exactly, in order, with its sizes; RUCCL_DEBUG's log lines and RUCCL_TRACE_FILE's file.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "collective/net/peer_auth.h"
#include "collective/trace/call_trace.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/group_factories.h"
#include "tests/collective/trace/debug_log_support.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

// The calls every rank of a 3-rank group makes, in order.
void known_sequence(Communicator& comm) {
  const int r = comm.rank();
  comm.all_reduce(Tensor::from_vector<float>({1, 2, 3}), ReduceOperation::Max);     // #1
  comm.broadcast(r == 1 ? Tensor::full({2, 2}, 5.0, DType::F64) : Tensor(), 1);     // #2
  comm.all_gather(Tensor::full({5}, r, DType::I32));                                // #3
  comm.barrier();                                                                   // #4
  comm.reduce_scatter(Tensor::full({6, 2}, 1.0, DType::F32), ReduceOperation::Sum,  // #5
                      CallOptions().with_label("reduce_scatter_dim"));
  if (r == 0) comm.send(Tensor::full({4}, 1.0, DType::I64), 2);
  if (r == 2) comm.recv(0);
}

}  // namespace

TEMPLATE_TEST_CASE("The trace of a known sequence holds exactly those calls in order with sizes",
                   "[collective][trace]", RUCCL_GROUP_FACTORIES) {
  std::vector<char> enabled_at_start(3, 1);  // asserted on this thread: Catch2 is not thread-safe
  auto out = run_group_with(TestType::make, 3, [&](Communicator& comm) {
    enabled_at_start[static_cast<std::size_t>(comm.rank())] = comm.trace().enabled();
    comm.barrier();  // before enable(): not recorded
    comm.trace().enable();
    known_sequence(comm);
    return comm.trace().events();
  });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    CHECK_FALSE(enabled_at_start[static_cast<std::size_t>(r)]);
    const std::vector<TraceEvent>& events = out[static_cast<std::size_t>(r)].value();
    REQUIRE(events.size() == (r == 1 ? 5u : 6u));
    const char* names[] = {"all_reduce", "broadcast", "all_gather", "barrier",
                           "reduce_scatter_dim"};
    const std::uint64_t bytes[] = {12, 32, 20, 0, 48};
    const DType dtypes[] = {DType::F32, DType::F64, DType::I32, DType::F32, DType::F32};
    const Shape shapes[] = {Shape{3}, Shape{2, 2}, Shape{5}, Shape{}, Shape{6, 2}};
    for (std::size_t i = 0; i < 5; ++i) {
      INFO("call " << i);
      const TraceEvent& e = events[i];
      CHECK(e.type == TraceEventType::Collective);
      CHECK(std::string(e.name) == names[i]);
      CHECK(e.seq == i + 2);  // #1 was the barrier before enable()
      CHECK(e.bytes == bytes[i]);
      CHECK(e.ok);
      CHECK(e.end_ns >= e.start_ns);
      if (i != 3) {
        CHECK(e.dtype == static_cast<std::uint8_t>(dtypes[i]));
        CHECK(e.shape() == shapes[i]);
      } else {
        CHECK(e.dtype == TraceEvent::kNone);
      }
      if (i > 0) CHECK(e.start_ns >= events[i - 1].end_ns);
    }
    CHECK(events[0].reduce_op == static_cast<std::uint8_t>(ReduceOperation::Max));
    CHECK(events[0].algorithm == static_cast<std::uint8_t>(Algorithm::Direct));
    CHECK(events[1].root == 1);
    CHECK(events[1].algorithm == static_cast<std::uint8_t>(Algorithm::Direct));  // Auto resolved
    if (r != 1) {
      const TraceEvent& p2p = events[5];
      CHECK(p2p.type == TraceEventType::PointToPoint);
      CHECK(std::string(p2p.name) == (r == 0 ? "send" : "recv"));
      CHECK(p2p.peer == (r == 0 ? 2 : 0));
      CHECK(p2p.bytes == 32);
    }
  }
}

TEMPLATE_TEST_CASE("Statistics count calls bytes and failures per operation and algorithm",
                   "[collective][trace]", RUCCL_GROUP_FACTORIES) {
  auto out = run_group_with(
      TestType::make, 2,
      [](Communicator& comm) {
        for (int i = 0; i < 3; ++i) comm.all_reduce(Tensor::full({8}, 1.0, DType::F32));
        comm.all_reduce(Tensor::full({8}, 1.0, DType::F64), ReduceOperation::Sum,
                        CallOptions().with_algorithm(Algorithm::Ring));
        comm.barrier();
        try {  // a mismatch: counted as a failed all_gather on both ranks
          comm.all_gather(Tensor::full({comm.rank() + 1}, 1.0, DType::F32));
        } catch (const CollectiveError&) {
        }
        return comm.stats().rows();
      },
      short_timeout());
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const auto& rows = out[static_cast<std::size_t>(r)].value();
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].op == "barrier");
    CHECK(rows[0].calls == 1);
    CHECK(rows[1].op == "all_reduce");
    CHECK(rows[1].algorithm == "direct");
    CHECK(rows[1].calls == 3);
    CHECK(rows[1].bytes == 96);
    CHECK(rows[1].failed == 0);
    CHECK(rows[1].seconds > 0);
    CHECK(rows[1].max_seconds <= rows[1].seconds);
    CHECK(rows[2].op == "all_reduce");
    CHECK(rows[2].algorithm == "ring");
    CHECK(rows[2].calls == 1);
    CHECK(rows[2].bytes == 64);
    CHECK(rows[3].op == "all_gather");
    CHECK(rows[3].calls == 1);
    CHECK(rows[3].failed == 1);
  }
}

TEST_CASE("A bad RUCCL_DEBUG value stops the group from being made", "[collective][trace]") {
  const ScopedEnv env("RUCCL_DEBUG", "LOUD");
  try {
    InProcessGroup::create(2);
    FAIL("no error");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    CHECK(std::string(e.what()) ==
          "RUCCL_DEBUG: expected WARN, INFO, TRACE or OFF (any case), got 'LOUD'");
  }
}

TEST_CASE("RUCCL_DEBUG=TRACE writes the set-up and one line per call to each rank's file",
          "[collective][trace]") {
  const auto dir = fresh_dir("ruccl_debug_log");
  const std::string pattern = (dir / "log.%r").string();
  // Connections refused by earlier test cases of this process would be the first log line.
  net::take_unlogged_auth_refusals();
  {
    const ScopedEnv level("RUCCL_DEBUG", "trace");
    const ScopedEnv file("RUCCL_DEBUG_FILE", pattern.c_str());
    auto out = run_group_with(InProcess::make, 2, [](Communicator& comm) {
      comm.all_reduce(Tensor::from_vector<float>({1, 2, 3}));
      comm.barrier();
    });
    for (const auto& o : out) REQUIRE(o.ok());
  }
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const std::string log = read_text(dir / ("log." + std::to_string(r)));
    std::istringstream lines(log);
    std::vector<std::string> got;
    for (std::string line; std::getline(lines, line);) got.push_back(line);
    REQUIRE(got.size() == 3);
    const std::string me = ":" + std::to_string(r) + " ruccl ";
    CHECK_THAT(got[0], Catch::Contains(me + "INFO rank " + std::to_string(r) + " of 2 on "));
    CHECK_THAT(got[0], Catch::Contains("transport in process (zero copy), engine algorithms"));
    CHECK_THAT(got[0], Catch::Contains("ring segments 4 MiB; tree arity 2; timeout 300000 ms"));
    CHECK_THAT(got[1], Catch::Contains(me + "TRACE all_reduce #1 F32 [3] 12 B Sum direct "));
    CHECK_THAT(got[2], Catch::Contains(me + "TRACE barrier #2 0 B direct "));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("RUCCL_DEBUG=WARN logs the hang report of the timeout that finished the group",
          "[collective][trace]") {
  const auto dir = fresh_dir("ruccl_warn_log");
  const std::string pattern = (dir / "log.%r").string();
  net::take_unlogged_auth_refusals();  // earlier test cases' refusals are not this log's
  {
    const ScopedEnv level("RUCCL_DEBUG", "WARN");
    const ScopedEnv file("RUCCL_DEBUG_FILE", pattern.c_str());
    run_group_with(
        InProcess::make, 2,
        [](Communicator& comm) {
          if (comm.rank() == 0) {
            comm.barrier(CallOptions().with_timeout(std::chrono::milliseconds(50)));
          } else {
            while (!comm.finished()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        },
        short_timeout());
  }
  const std::string log = read_text(dir / "log.0");
  CHECK_THAT(log, Catch::Contains(":0 ruccl WARN the group failed: barrier (call #1): rank 0 "
                                  "timed out after 50 ms"));
  CHECK_THAT(log, Catch::Contains("calls reached: rank(s) [0] at #1, rank(s) [1] at none "
                                  "(missing from #1: rank(s) [1])\n"));
  CHECK(read_text(dir / "log.1").empty());  // rank 1 made no call: nothing failed there
  std::filesystem::remove_all(dir);
}

TEST_CASE("RUCCL_TRACE_FILE writes each rank's Chrome trace when its communicator is destroyed",
          "[collective][trace]") {
  const auto dir = fresh_dir("ruccl_trace_file");
  const std::string pattern = (dir / "trace.%r.json").string();
  {
    const ScopedEnv file("RUCCL_TRACE_FILE", pattern.c_str());
    std::vector<char> enabled(2, 0);
    run_group_with(InProcess::make, 2, [&](Communicator& comm) {
      enabled[static_cast<std::size_t>(comm.rank())] = comm.trace().enabled();
      comm.all_gather(Tensor::full({4}, 1.0, DType::F32));
      { TraceSpan span(comm.trace(), "optimizer"); }
    });
    CHECK(enabled == std::vector<char>{1, 1});  // RUCCL_TRACE_FILE turned the trace on
  }
  for (int r = 0; r < 2; ++r) {
    const std::string json = read_text(dir / ("trace." + std::to_string(r) + ".json"));
    INFO(json);
    CHECK_THAT(json, Catch::StartsWith("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"rank\":" +
                                       std::to_string(r) + ",\"world_size\":2,"));
    CHECK_THAT(json, Catch::Contains("\"name\":\"all_gather\",\"cat\":\"collective\""));
    CHECK_THAT(json, Catch::Contains("\"name\":\"optimizer\",\"cat\":\"training\""));
    CHECK_THAT(json, Catch::EndsWith("]}\n"));
  }
  std::filesystem::remove_all(dir);
}

TEMPLATE_TEST_CASE("The trace names the peer a call waited on longest", "[collective][trace]",
                   RUCCL_GROUP_FACTORIES) {
  // Rank 2 starts its all_reduce 200 ms after ranks 0 and 1 said they are about to start theirs.
  std::atomic<int> starting{0};
  auto out = run_group_with(TestType::make, 3, [&](Communicator& comm) {
    comm.trace().enable();
    comm.barrier();
    if (comm.rank() == 2) {
      while (starting.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } else {
      starting.fetch_add(1);
    }
    comm.all_reduce(Tensor::full({16}, 1.0, DType::F32));
    return comm.trace().events();
  });
  for (int r : {0, 1}) {
    INFO("rank " << r);
    const std::vector<TraceEvent>& events = out[static_cast<std::size_t>(r)].value();
    REQUIRE(events.size() == 2);
    CHECK(events[1].waited_peer == 2);
    // A bound, not a timing: it fails only if this rank took 150 ms to enter its wait.
    CHECK(events[1].waited_ns >= 50'000'000);
    CHECK(events[1].waited_ns <= events[1].end_ns - events[1].start_ns);
  }
}
