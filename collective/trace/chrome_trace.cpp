#include "collective/trace/chrome_trace.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "collective/common/collective_error.h"
#include "collective/common/reduce_operation.h"
#include "collective/protocol/call_options.h"

namespace ruccl {

namespace {

// A JSON string literal of `text`.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string dtype_text(std::uint8_t dtype) {
  return dtype == TraceEvent::kNone ? std::string() : std::string(dtype_name(DType(dtype)));
}

std::string shape_text(const TraceEvent& e) { return e.ndim < 0 ? "" : e.shape().to_string(); }

const char* algorithm_text(const TraceEvent& e) {
  const char* name = algorithm_name(static_cast<Algorithm>(e.algorithm));
  return name != nullptr ? name : "?";
}

void write_event(std::ostream& out, const TraceRecorder& rec, const TraceEvent& e) {
  const bool span = e.type == TraceEventType::Span;
  out << "{\"ph\":\"X\",\"pid\":" << rec.rank
      << ",\"tid\":" << (span ? kTraceSpanTrack : kTraceCollectiveTrack)
      << ",\"name\":" << quoted(e.name) << ",\"cat\":"
      << quoted(span ? e.category
                     : (e.type == TraceEventType::PointToPoint ? "point_to_point" : "collective"))
      << std::fixed << std::setprecision(3)
      << ",\"ts\":" << rec.origin_wall_us() + static_cast<double>(e.start_ns) / 1e3
      << ",\"dur\":" << static_cast<double>(e.end_ns - e.start_ns) / 1e3 << ",\"args\":{";
  out << "\"ok\":" << (e.ok ? "true" : "false");
  if (span) {
    if (e.value >= 0) out << ",\"value\":" << e.value;
    out << "}}";
    return;
  }
  if (e.seq > 0) out << ",\"seq\":" << e.seq;
  if (e.peer >= 0) out << ",\"peer\":" << e.peer;
  if (e.dtype != TraceEvent::kNone) out << ",\"dtype\":" << quoted(dtype_text(e.dtype));
  if (e.ndim >= 0) out << ",\"shape\":" << quoted(shape_text(e));
  out << ",\"bytes\":" << e.bytes;
  if (e.reduce_op != TraceEvent::kNone) {
    out << ",\"op\":" << quoted(reduce_operation_name(ReduceOperation(e.reduce_op)));
  }
  if (e.root >= 0) out << ",\"root\":" << e.root;
  if (e.type == TraceEventType::Collective) {
    out << ",\"algorithm\":" << quoted(algorithm_text(e));
    if (e.tree_arity > 0) out << ",\"tree_arity\":" << e.tree_arity;
    out << ",\"engine\":" << quoted(rec.engine);
  }
  if (e.segments >= 0) out << ",\"segments\":" << e.segments;
  if (e.waited_peer >= 0) {
    out << ",\"waited_on\":" << e.waited_peer
        << ",\"waited_us\":" << static_cast<double>(e.waited_ns) / 1e3;
  }
  out << "}}";
}

}  // namespace

void write_chrome_trace(std::ostream& out, const TraceRecorder& rec) {
  const std::vector<TraceEvent> events = rec.events();
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"rank\":" << rec.rank
      << ",\"world_size\":" << rec.world_size << ",\"host\":" << quoted(rec.host)
      << ",\"engine\":" << quoted(rec.engine) << ",\"dropped_events\":" << rec.dropped()
      << "},\n\"traceEvents\":[\n";
  out << "{\"ph\":\"M\",\"pid\":" << rec.rank << ",\"name\":\"process_name\",\"args\":{\"name\":"
      << quoted(str("rank ", rec.rank, " (", rec.host, ")"))
      << "}},\n{\"ph\":\"M\",\"pid\":" << rec.rank
      << ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":" << rec.rank
      << "}},\n{\"ph\":\"M\",\"pid\":" << rec.rank << ",\"tid\":" << kTraceCollectiveTrack
      << ",\"name\":\"thread_name\",\"args\":{\"name\":\"collectives\"}},\n{\"ph\":\"M\",\"pid\":"
      << rec.rank << ",\"tid\":" << kTraceSpanTrack
      << ",\"name\":\"thread_name\",\"args\":{\"name\":\"training\"}}";
  for (const TraceEvent& e : events) {
    out << ",\n";
    write_event(out, rec, e);
  }
  out << "\n]}\n";
}

void write_chrome_trace_file(const std::filesystem::path& path, const TraceRecorder& recorder) {
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (out) write_chrome_trace(out, recorder);
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw CollectiveError(
          CollectiveErrorKind::InvalidArgument,
          str("write_chrome_trace_file: expected a writable path, got '", path.string(), "'"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str("write_chrome_trace_file: cannot rename the trace into '",
                              path.string(), "': ", ec.message()));
  }
}

std::string describe_trace_event(const TraceEvent& e) {
  std::ostringstream out;
  out << e.name;
  if (e.seq > 0) out << " #" << e.seq;
  if (e.type == TraceEventType::Span) {
    if (e.value >= 0) out << " " << e.value;
  } else {
    if (e.peer >= 0) out << " peer " << e.peer;
    if (e.dtype != TraceEvent::kNone) out << " " << dtype_text(e.dtype);
    if (e.ndim >= 0) out << " " << shape_text(e);
    out << " " << e.bytes << " B";
    if (e.reduce_op != TraceEvent::kNone) {
      out << " " << reduce_operation_name(ReduceOperation(e.reduce_op));
    }
    if (e.root >= 0) out << " root " << e.root;
    if (e.type == TraceEventType::Collective) out << " " << algorithm_text(e);
    if (e.segments >= 0) out << " segments " << e.segments;
  }
  out << std::fixed << std::setprecision(1) << " "
      << static_cast<double>(e.end_ns - e.start_ns) / 1e3 << " us";
  if (e.waited_peer >= 0) {
    out << " (waited " << static_cast<double>(e.waited_ns) / 1e3 << " us on rank " << e.waited_peer
        << ")";
  }
  if (!e.ok) out << " FAILED";
  return out.str();
}

}  // namespace ruccl
