#pragma once
// TraceRecorder: a per-communicator record of what the collectives did, for a Chrome/Perfetto
// timeline (chrome_trace.h) and for tests: every collective and point-to-point call (kind, dtype,
// shape, bytes, reduce op, root, algorithm, engine, segments, start and end, the peer waited on
// longest where the transport can tell) and the spans higher layers mark (the training step's
// forward, backward, gradient buckets, optimizer: TraceSpan).
//
// Off by default. Then a call pays one relaxed load and one predictable branch (enabled()), and
// nothing is allocated. enable() preallocates a ring of `capacity` events; once full, the oldest
// are overwritten (events() says how many were dropped), so a long job's trace keeps its end.
//
//   comm.trace().enable();
//   comm.all_reduce(t);
//   for (const TraceEvent& e : comm.trace().events()) ...   // or write_chrome_trace(...)
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "collective/protocol/call_record.h"

namespace ruccl {

/// What one trace event is.
enum class TraceEventType : std::uint8_t {
  Collective,    ///< a collective call (seq > 0)
  PointToPoint,  ///< send or recv (peer >= 0)
  Span,          ///< a span a higher layer marked (TraceSpan): forward, backward, a bucket, ...
};

/// One recorded event. Fixed size, no allocation.
struct TraceEvent {
  static constexpr int kNameBytes = 48;
  static constexpr std::uint8_t kNone = CallRecord::kNone;

  TraceEventType type = TraceEventType::Collective;
  char name[kNameBytes] = {};  ///< the call's label ("all_reduce", "all_gather_dim") or span's
  char category[16] = {};      ///< a span's category ("training"); collectives: empty
  std::uint64_t seq = 0;       ///< collective call number (CallRecord::seq); 0 otherwise
  OpKind kind = OpKind::Barrier;
  std::uint8_t dtype = kNone;      ///< DType, or kNone
  std::uint8_t reduce_op = kNone;  ///< ReduceOperation, or kNone
  std::uint8_t algorithm = 0;      ///< Algorithm the call ran
  std::int32_t tree_arity = 0;
  std::int32_t root = -1;  ///< root rank, or -1
  std::int32_t peer = -1;  ///< point-to-point: the other rank
  std::int32_t ndim = -1;  ///< -1: no shape
  std::int64_t dims[Shape::kMaxDims] = {};
  std::uint64_t bytes = 0;        ///< bytes of this rank's tensor (input, or received)
  std::int64_t segments = -1;     ///< messages per chunk a ring moves (-1: not segmented)
  std::int32_t waited_peer = -1;  ///< the peer this rank waited on longest, or -1 (not known)
  std::int64_t waited_ns = 0;     ///< how long it waited on it
  std::int64_t value = -1;        ///< a span's argument (a bucket's bytes, a step), or -1
  std::int64_t start_ns = 0;      ///< since the recorder's origin (steady clock)
  std::int64_t end_ns = 0;
  bool ok = true;  ///< false: the call threw

  /// The recorded shape (ndim >= 0).
  Shape shape() const;
};

/// The trace of one rank. record() and events() are safe from several threads (a training loop
/// marking spans while another thread reads); enable()/disable() are for the rank's own thread.
class TraceRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kDefaultCapacity = std::size_t{1} << 16;

  TraceRecorder();

  /// Whether calls are recorded: the single branch a call pays when tracing is off.
  bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
  /// Starts recording into a ring of `capacity` (>= 1) events (a running trace keeps its events).
  void enable(std::size_t capacity = kDefaultCapacity);
  /// Stops recording; the events stay until clear().
  void disable() noexcept { enabled_.store(false, std::memory_order_relaxed); }
  /// Forgets every event.
  void clear();

  /// Appends `event` (when enabled; else nothing).
  void record(const TraceEvent& event);
  /// The events in the order they were recorded (the newest `capacity` of them).
  std::vector<TraceEvent> events() const;
  /// How many events the ring overwrote since enable() / clear().
  std::uint64_t dropped() const;

  /// Nanoseconds since the origin (the recorder's construction) on the steady clock.
  std::int64_t now_ns() const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - origin_).count();
  }
  /// Wall-clock microseconds since the Unix epoch at the origin: a Chrome trace's events are
  /// placed at origin_wall_us + start_ns / 1000, so the traces of several processes (one machine,
  /// or machines with synchronised clocks) line up when merged.
  double origin_wall_us() const { return origin_wall_us_; }

  /// The rank, world size, host and engine the trace belongs to (written into the trace file).
  int rank = 0;
  int world_size = 1;
  std::string host;
  std::string engine;

 private:
  std::atomic<bool> enabled_{false};
  Clock::time_point origin_;
  double origin_wall_us_ = 0.0;
  mutable std::mutex mutex_;
  std::vector<TraceEvent> ring_;
  std::uint64_t next_ = 0;  // events recorded since enable()/clear(); ring_[next_ % size]
};

/// Marks a span (a training phase) on a recorder while it lives: costs one branch when the
/// recorder is off. `name` and `category` are copied (truncated to fit the event).
///
///   { TraceSpan span(comm.trace(), "backward"); loss.backward(); }
class TraceSpan {
 public:
  TraceSpan(TraceRecorder& recorder, const char* name, std::int64_t value = -1,
            const char* category = "training");
  ~TraceSpan();
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  TraceRecorder* recorder_;  // nullptr when the recorder was off at the start
  const char* name_;
  const char* category_;
  std::int64_t value_;
  std::int64_t start_ns_ = 0;
  int exceptions_ = 0;  // std::uncaught_exceptions() at the start: a span a throw ends is not ok
};

}  // namespace ruccl
