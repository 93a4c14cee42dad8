// The observability building blocks on their own: RUCCL_DEBUG parsing, the rank patterns, the
// trace recorder's ring, the Chrome trace writer, the statistics and the hang report's text.
#include <catch2/catch.hpp>

#include <sstream>

#include "collective/common/collective_error.h"
#include "collective/common/reduce_operation.h"
#include "collective/protocol/hang_report.h"
#include "collective/trace/call_stats.h"
#include "collective/trace/call_trace.h"
#include "collective/trace/chrome_trace.h"
#include "collective/trace/debug_settings.h"
#include "tensor/core/dtype.h"

using namespace ruccl;

namespace {

// The InvalidConfig message parse_debug_settings throws for these values ("" when none).
std::string parse_error(const char* level, const char* log_file, const char* trace_file) {
  try {
    parse_debug_settings(level, log_file, trace_file);
  } catch (const CollectiveError& e) {
    REQUIRE(e.kind() == CollectiveErrorKind::InvalidConfig);
    return e.what();
  }
  return "";
}

TraceEvent call_event(std::uint64_t seq, const char* name, std::uint64_t bytes) {
  TraceEvent e;
  e.seq = seq;
  CallRecord::set_text(e.name, name);
  e.bytes = bytes;
  return e;
}

}  // namespace

TEST_CASE("RUCCL_DEBUG accepts WARN INFO TRACE and OFF in any case and unset means off",
          "[collective][trace]") {
  CHECK(parse_debug_settings(nullptr, nullptr, nullptr).level == DebugLevel::Off);
  CHECK(parse_debug_settings("", nullptr, nullptr).level == DebugLevel::Off);
  CHECK(parse_debug_settings("warn", nullptr, nullptr).level == DebugLevel::Warn);
  CHECK(parse_debug_settings("Info", nullptr, nullptr).level == DebugLevel::Info);
  CHECK(parse_debug_settings("TRACE", nullptr, nullptr).level == DebugLevel::Trace);
  CHECK(parse_debug_settings("off", nullptr, nullptr).level == DebugLevel::Off);
  const DebugSettings s = parse_debug_settings("INFO", "/tmp/log.%r", "trace.%h.%r.json");
  CHECK(s.log_file == "/tmp/log.%r");
  CHECK(s.trace_file == "trace.%h.%r.json");
}

TEST_CASE("A bad RUCCL_DEBUG value is an InvalidConfig error that says what was expected",
          "[collective][trace]") {
  CHECK(parse_error("VERBOSE", nullptr, nullptr) ==
        "RUCCL_DEBUG: expected WARN, INFO, TRACE or OFF (any case), got 'VERBOSE'");
  CHECK(parse_error("1", nullptr, nullptr) ==
        "RUCCL_DEBUG: expected WARN, INFO, TRACE or OFF (any case), got '1'");
  CHECK(parse_error(" INFO", nullptr, nullptr) ==
        "RUCCL_DEBUG: expected WARN, INFO, TRACE or OFF (any case), got ' INFO'");
}

TEST_CASE("A bad percent sequence in RUCCL_DEBUG_FILE or RUCCL_TRACE_FILE names the variable",
          "[collective][trace]") {
  CHECK(parse_error("INFO", "/tmp/log.%x", nullptr) ==
        "RUCCL_DEBUG_FILE: expected %r (rank), %h (host), %p (pid) or %% after '%', got '%x' in "
        "'/tmp/log.%x'");
  CHECK(parse_error(nullptr, nullptr, "trace.%") ==
        "RUCCL_TRACE_FILE: expected %r (rank), %h (host), %p (pid) or %% after '%', got a '%' at "
        "the end in 'trace.%'");
}

TEST_CASE("Rank patterns expand rank host pid and a literal percent", "[collective][trace]") {
  CHECK(expand_rank_pattern("log.%r", 3, "h", 7, "X") == "log.3");
  CHECK(expand_rank_pattern("%h-%p-%r-100%%.txt", 12, "node1", 4242, "X") ==
        "node1-4242-12-100%.txt");
  CHECK(expand_rank_pattern("plain", 0, "h", 1, "X") == "plain");
}

TEST_CASE("A trace recorder is off by default and records nothing until enabled",
          "[collective][trace]") {
  TraceRecorder rec;
  CHECK_FALSE(rec.enabled());
  rec.record(call_event(1, "all_reduce", 16));
  { TraceSpan span(rec, "forward"); }
  CHECK(rec.events().empty());
  rec.enable(8);
  CHECK(rec.enabled());
  rec.record(call_event(2, "all_gather", 32));
  { TraceSpan span(rec, "backward", 5); }
  const std::vector<TraceEvent> events = rec.events();
  REQUIRE(events.size() == 2);
  CHECK(std::string(events[0].name) == "all_gather");
  CHECK(events[0].seq == 2);
  CHECK(events[1].type == TraceEventType::Span);
  CHECK(std::string(events[1].name) == "backward");
  CHECK(std::string(events[1].category) == "training");
  CHECK(events[1].value == 5);
  CHECK(events[1].end_ns >= events[1].start_ns);
  rec.disable();
  rec.record(call_event(3, "barrier", 0));
  CHECK(rec.events().size() == 2);
}

TEST_CASE("A full trace ring keeps the newest events in order and counts the dropped ones",
          "[collective][trace]") {
  TraceRecorder rec;
  rec.enable(3);
  for (std::uint64_t s = 1; s <= 7; ++s) rec.record(call_event(s, "all_reduce", s));
  const std::vector<TraceEvent> events = rec.events();
  REQUIRE(events.size() == 3);
  CHECK(events[0].seq == 5);
  CHECK(events[1].seq == 6);
  CHECK(events[2].seq == 7);
  CHECK(rec.dropped() == 4);
  rec.enable(5);  // a larger ring keeps what it had, oldest first
  rec.record(call_event(8, "all_reduce", 8));
  const std::vector<TraceEvent> grown = rec.events();
  REQUIRE(grown.size() == 4);
  CHECK(grown.front().seq == 5);
  CHECK(grown.back().seq == 8);
  rec.clear();
  CHECK(rec.events().empty());
  CHECK_THROWS_AS(rec.enable(0), CollectiveError);
}

TEST_CASE("A span ended by an exception is recorded as failed", "[collective][trace]") {
  TraceRecorder rec;
  rec.enable(4);
  try {
    TraceSpan span(rec, "optimizer");
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  REQUIRE(rec.events().size() == 1);
  CHECK_FALSE(rec.events()[0].ok);
}

TEST_CASE("The Chrome trace names the rank and its tracks and holds each event with its arguments",
          "[collective][trace]") {
  TraceRecorder rec;
  rec.rank = 1;
  rec.world_size = 2;
  rec.host = "node\"7";
  rec.engine = "algorithms over tcp";
  rec.enable(4);
  TraceEvent e = call_event(3, "all_reduce", 4096);
  e.kind = OpKind::AllReduce;
  e.dtype = static_cast<std::uint8_t>(DType::F32);
  e.reduce_op = static_cast<std::uint8_t>(ReduceOperation::Sum);
  e.algorithm = static_cast<std::uint8_t>(Algorithm::Ring);
  e.ndim = 1;
  e.dims[0] = 1024;
  e.start_ns = 1000;
  e.end_ns = 3500;
  e.waited_peer = 0;
  e.waited_ns = 1500;
  rec.record(e);
  std::ostringstream out;
  write_chrome_trace(out, rec);
  const std::string json = out.str();
  CHECK_THAT(json, Catch::Contains("\"host\":\"node\\\"7\""));
  CHECK_THAT(json, Catch::Contains("\"args\":{\"name\":\"rank 1 (node\\\"7)\"}"));
  CHECK_THAT(json, Catch::Contains("\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":"
                                   "\"collectives\"}"));
  CHECK_THAT(json, Catch::Contains("\"ph\":\"X\",\"pid\":1,\"tid\":1,\"name\":\"all_reduce\","
                                   "\"cat\":\"collective\""));
  CHECK_THAT(json, Catch::Contains(",\"dur\":2.500,\"args\":{\"ok\":true,\"seq\":3,\"dtype\":"
                                   "\"F32\",\"shape\":\"[1024]\",\"bytes\":4096,\"op\":\"Sum\","
                                   "\"algorithm\":\"ring\",\"engine\":\"algorithms over tcp\","
                                   "\"waited_on\":0,\"waited_us\":1.500}}"));
  CHECK(describe_trace_event(e) ==
        "all_reduce #3 F32 [1024] 4096 B Sum ring 2.5 us (waited 1.5 "
        "us on rank 0)");
}

TEST_CASE("Statistics add up per operation and algorithm in a fixed order", "[collective][trace]") {
  CollectiveStats stats;
  const auto ring = static_cast<std::uint8_t>(Algorithm::Ring);
  const auto direct = static_cast<std::uint8_t>(Algorithm::Direct);
  stats.add(static_cast<int>(OpKind::AllReduce), ring, 100, 2000, true);
  stats.add(static_cast<int>(OpKind::AllReduce), ring, 50, 5000, false);
  stats.add(static_cast<int>(OpKind::AllReduce), direct, 8, 100, true);
  stats.add(CollectiveStats::kSend, 0, 12, 10, true);
  stats.add(static_cast<int>(OpKind::Barrier), direct, 0, 10, true);
  const std::vector<CollectiveStatsRow> rows = stats.rows();
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].op == "barrier");
  CHECK(rows[1].op == "all_reduce");
  CHECK(rows[1].algorithm == "direct");
  CHECK(rows[2].algorithm == "ring");
  CHECK(rows[2].calls == 2);
  CHECK(rows[2].failed == 1);
  CHECK(rows[2].bytes == 150);
  CHECK(rows[2].seconds == Approx(7e-6));
  CHECK(rows[2].max_seconds == Approx(5e-6));
  CHECK(rows[3].op == "send");
  CHECK(rows[3].algorithm.empty());
  CHECK(stats.total_calls() == 5);
  CHECK_THAT(stats.to_string(), Catch::Contains("all_reduce"));
}

TEST_CASE("The hang report groups ranks by the call they reached and names the missing ones",
          "[collective][trace]") {
  const std::vector<std::uint64_t> reached = {5, 5, 4, 5};
  CHECK(describe_calls_reached(reached, 5, RankNames()) ==
        "calls reached: rank(s) [0, 1, 3] at #5, rank(s) [2] at #4 (missing from #5: rank(s) [2])");
  const std::vector<std::uint64_t> fresh = {1, kCallNotSeen};
  CHECK(describe_calls_reached(fresh, 1, RankNames("peer", {7, 9})) ==
        "calls reached: peer(s) [7] at #1, peer(s) [9] at none (missing from #1: peer(s) [9])");
  const std::vector<std::uint64_t> all = {3, 3};
  CHECK(describe_calls_reached(all, 3, RankNames()) == "calls reached: rank(s) [0, 1] at #3");
}
