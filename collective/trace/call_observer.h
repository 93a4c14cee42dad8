#pragma once
// CallObserver: what the Communicator core does with each finished call to make it visible --
// statistics (always, a few nanoseconds), the trace (TraceRecorder, when enabled), and the
// RUCCL_DEBUG log: INFO prints the group's set-up once per rank, TRACE one line per call, WARN
// the error that finished the group (a Timeout's hang report, a lost peer) once per rank, and the
// connections this process refused (failed authentication, over a limit; never the secret).
//
// The core holds one per communicator and calls start() when a call begins and finish() when it
// returns or throws. Everything it reads from the environment is checked when the communicator
// is made (debug_settings.h): a bad value is a CollectiveError(InvalidConfig) then.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "collective/common/collective_error.h"
#include "collective/protocol/call_options.h"
#include "collective/protocol/call_record.h"
#include "collective/trace/call_stats.h"
#include "collective/trace/call_trace.h"
#include "collective/trace/debug_settings.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// Where one communicator's log lines go (stderr, or its RUCCL_DEBUG_FILE), each line whole.
class DebugLog {
 public:
  DebugLog() = default;
  /// Opens `settings.log_file` expanded for this rank (appending), or logs to stderr.
  DebugLog(const DebugSettings& settings, int rank, const std::string& host);
  bool enabled(DebugLevel level) const { return level != DebugLevel::Off && level <= level_; }
  /// Writes "<host>:<pid>:<rank> ruccl <LEVEL> <text>\n" when `level` is enabled. Never throws.
  void write(DebugLevel level, const std::string& text) noexcept;

 private:
  DebugLevel level_ = DebugLevel::Off;
  std::string prefix_;
  std::shared_ptr<std::FILE> file_;  // null: stderr
};

class CallObserver {
 public:
  /// Reads RUCCL_DEBUG, RUCCL_DEBUG_FILE and RUCCL_TRACE_FILE (throws InvalidConfig for a bad
  /// value), enables the trace when RUCCL_TRACE_FILE is set, and prints the INFO set-up line.
  CallObserver(Transport& transport, const std::string& engine, const CommunicatorOptions& options);
  /// Writes the trace to RUCCL_TRACE_FILE when it was set (a failure to write is logged at WARN).
  ~CallObserver();
  CallObserver(const CallObserver&) = delete;
  CallObserver& operator=(const CallObserver&) = delete;

  /// The time a call starts (read for the statistics: always). While the trace records, also
  /// restarts the transport's note of the peer waited on longest (Transport::observe_waits).
  std::int64_t start() noexcept {
    if (trace_.enabled() || observing_waits_) observe_waits();
    return trace_.now_ns();
  }
  /// A collective finished: `record` is this rank's, `records` every rank's when `ok` (the call
  /// was agreed; used to resolve a broadcast's Auto algorithm from root's size).
  void finish(const CallRecord& record, std::span<const CallRecord> records, std::int64_t start_ns,
              bool ok) noexcept;
  /// A send (`sending`) or recv with `peer` finished, moving `bytes`.
  void finish_point_to_point(bool sending, int peer, const char* label, std::uint64_t bytes,
                             std::int64_t start_ns, bool ok) noexcept;
  /// Logs, at WARN, the error in flight that failed the group (once per communicator). Call
  /// inside a catch block.
  void warn_current_exception() noexcept;

  TraceRecorder& trace() { return trace_; }
  const CollectiveStats& stats() const { return stats_; }

 private:
  void observe_waits() noexcept;
  /// At WARN: one line for the connections refused since any log last showed them
  /// (net::take_unlogged_auth_refusals: an impostor, a flood, a client over a store limit).
  void log_refusals() noexcept;
  TraceEvent event_of(const CallRecord& record, std::span<const CallRecord> records,
                      std::int64_t start_ns, std::int64_t end_ns, bool ok) const;
  /// Sets e's waited-on peer from the transport while the trace observes waits.
  void note_longest_wait(TraceEvent& e) const;

  Transport& transport_;
  int rank_;
  int world_;
  LinkKind link_;
  bool observing_waits_ = false;
  CommunicatorOptions options_;
  DebugSettings settings_;
  DebugLog log_;
  TraceRecorder trace_;
  CollectiveStats stats_;
  bool warned_ = false;
};

}  // namespace ruccl
