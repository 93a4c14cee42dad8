#pragma once
// The Chrome trace-event format of a TraceRecorder (chrome://tracing, ui.perfetto.dev): one JSON
// object per rank whose traceEvents are complete ("X") events, the rank as the process (pid =
// rank, named "rank R (host)") and two tracks: tid 1 the collectives and point-to-point calls,
// tid 2 the spans (training phases). Timestamps are wall-clock microseconds since the Unix
// epoch, so tools/merge_traces.py can put every rank's file on one timeline.
#include <filesystem>
#include <ostream>
#include <string>

#include "collective/trace/call_trace.h"

namespace ruccl {

/// Track (tid) of the collectives and of the spans in a written trace.
inline constexpr int kTraceCollectiveTrack = 1;
inline constexpr int kTraceSpanTrack = 2;

/// Writes `recorder`'s events as one Chrome trace JSON object.
void write_chrome_trace(std::ostream& out, const TraceRecorder& recorder);
/// Writes the trace to `path` atomically (a temporary file renamed into place). Throws
/// CollectiveError(InvalidArgument) naming the path when it cannot be written.
void write_chrome_trace_file(const std::filesystem::path& path, const TraceRecorder& recorder);

/// One line describing an event, as RUCCL_DEBUG=TRACE prints it:
/// "all_reduce #3 F32 [1024] 4096 B Sum direct 12.3 us (waited 4.5 us on rank 1)".
std::string describe_trace_event(const TraceEvent& event);

}  // namespace ruccl
