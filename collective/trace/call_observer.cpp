#include "collective/trace/call_observer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "collective/algorithms/selection.h"
#include "collective/common/reduce_operation.h"
#include "collective/net/peer_auth.h"
#include "collective/trace/chrome_trace.h"

namespace ruccl {

namespace {

// Bytes of the tensor a record describes (0 when it has none).
std::uint64_t record_bytes(const CallRecord& r) {
  if (r.dtype == CallRecord::kNone || r.ndim < 0) return 0;
  std::uint64_t n = 1;
  for (int d = 0; d < r.ndim; ++d)
    n *= static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.dims[d]));
  return n * dtype_size(static_cast<DType>(r.dtype));
}

std::string size_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20) && bytes % (std::size_t{1} << 20) == 0) {
    return str(bytes >> 20, " MiB");
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return str(bytes >> 10, " KiB");
  return str(bytes, " B");
}

bool is_broadcast(OpKind kind) {
  return kind == OpKind::Broadcast || kind == OpKind::BroadcastFromSender;
}

}  // namespace

// ---- log ----------------------------------------------------------------------------------------

DebugLog::DebugLog(const DebugSettings& settings, int rank, const std::string& host)
    : level_(settings.level), prefix_(str(host, ":", ::getpid(), ":", rank, " ruccl ")) {
  if (level_ == DebugLevel::Off || settings.log_file.empty()) return;
  const std::string path =
      expand_rank_pattern(settings.log_file, rank, host, ::getpid(), "RUCCL_DEBUG_FILE");
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("RUCCL_DEBUG_FILE: expected a file this process can append to, got '",
                              path, "': ", std::strerror(errno)));
  }
  file_.reset(f, [](std::FILE* p) { std::fclose(p); });
}

void DebugLog::write(DebugLevel level, const std::string& text) noexcept {
  if (!enabled(level)) return;
  try {
    const std::string line = str(prefix_, debug_level_name(level), " ", text, "\n");
    std::FILE* out = file_ ? file_.get() : stderr;
    std::fwrite(line.data(), 1, line.size(), out);  // one call: lines of ranks never interleave
    std::fflush(out);
  } catch (...) {
  }
}

// ---- observer -----------------------------------------------------------------------------------

CallObserver::CallObserver(Transport& transport, const std::string& engine,
                           const CommunicatorOptions& options)
    : transport_(transport),
      rank_(transport.rank()),
      world_(transport.world_size()),
      link_(transport.traits().link),
      options_(options),
      settings_(debug_settings_from_env()) {
  const std::string host = local_host_name();
  log_ = DebugLog(settings_, rank_, host);
  trace_.rank = rank_;
  trace_.world_size = world_;
  trace_.host = host;
  trace_.engine = engine;
  if (!settings_.trace_file.empty()) trace_.enable();
  log_refusals();  // those of this group's connect (and any before)
  if (log_.enabled(DebugLevel::Info)) {
    const auto algo = [](Algorithm a) { return algorithm_name(a) ? algorithm_name(a) : "?"; };
    const bool shared_memory = link_ == LinkKind::SharedMemory;
    const std::size_t ring_segment = ring_segment_bytes(options, world_, link_);
    log_.write(
        DebugLevel::Info,
        str(options.rank_names.name(rank_), " of ", world_, " on ", host, " (pid ", ::getpid(),
            "): transport ", link_kind_name(link_), ", engine ", engine, "; algorithms all_reduce ",
            algo(options.all_reduce_algorithm), ", reduce ", algo(options.reduce_algorithm),
            ", broadcast ", algo(options.broadcast_algorithm), "; Auto: ",
            link_ == LinkKind::InProcess
                ? "direct at every size"
                : str("direct below ",
                      size_text(shared_memory ? options.shared_memory_ring_threshold_bytes
                                              : options.ring_threshold_bytes),
                      world_ >= 3
                          ? str(" (all_reduce, reduce: ",
                                size_text(shared_memory
                                              ? options.shared_memory_ring_threshold_bytes_from_3
                                              : options.ring_threshold_bytes_from_3),
                                ")")
                          : std::string(),
                      ", ring at or above"),
            "; direct all_reduce folds all up to ", size_text(options.direct_fold_all_bytes),
            "; ring segments ", size_text(options.segment_bytes),
            ring_segment != options.segment_bytes
                ? str(" (all_reduce, reduce: ", size_text(ring_segment), ")")
                : std::string(),
            "; tree arity ", options.tree_arity, "; timeout ", options.timeout.count(),
            " ms; trace ", settings_.trace_file.empty() ? "off" : settings_.trace_file));
  }
}

CallObserver::~CallObserver() {
  if (settings_.trace_file.empty()) return;
  try {
    const std::string path = expand_rank_pattern(settings_.trace_file, rank_, trace_.host,
                                                 ::getpid(), "RUCCL_TRACE_FILE");
    write_chrome_trace_file(path, trace_);
    log_.write(DebugLevel::Info,
               str("wrote the trace of ", trace_.events().size(), " events to ", path));
  } catch (const std::exception& e) {
    // A destructor never throws: the lost trace is said on stderr whatever the level.
    std::fprintf(stderr, "ruccl: rank %d: RUCCL_TRACE_FILE not written: %s\n", rank_, e.what());
  }
}

void CallObserver::observe_waits() noexcept {
  observing_waits_ = trace_.enabled();
  transport_.observe_waits(observing_waits_);  // on: also resets the note for this call
}

void CallObserver::note_longest_wait(TraceEvent& e) const {
  if (!observing_waits_) return;
  const PeerWait wait = transport_.longest_wait();
  e.waited_peer = wait.peer;
  e.waited_ns = wait.ns;
}

TraceEvent CallObserver::event_of(const CallRecord& record, std::span<const CallRecord> records,
                                  std::int64_t start_ns, std::int64_t end_ns, bool ok) const {
  TraceEvent e;
  e.type = TraceEventType::Collective;
  std::memcpy(e.name, record.label, sizeof e.name);
  e.name[sizeof e.name - 1] = '\0';
  e.seq = record.seq;
  e.kind = record.kind;
  e.reduce_op = record.reduce_op;
  e.root = record.root;
  e.tree_arity = record.tree_arity;
  // A rank without a tensor (a broadcast or scatter non-root) moves root's.
  const CallRecord* described = &record;
  if (ok && record.dtype == CallRecord::kNone && record.root >= 0 &&
      static_cast<std::size_t>(record.root) < records.size()) {
    described = &records[static_cast<std::size_t>(record.root)];
  }
  if (ok && is_broadcast(record.kind)) {
    for (const CallRecord& r : records) {
      if (r.has_tensor) described = &r;  // the one sender
    }
  }
  e.dtype = described->dtype;
  e.ndim = described->ndim;
  for (int d = 0; d < Shape::kMaxDims; ++d) e.dims[d] = described->dims[d];
  e.bytes = record_bytes(*described);
  auto a = static_cast<Algorithm>(record.algorithm);
  if (a == Algorithm::Auto && is_broadcast(record.kind) && ok) {
    a = auto_algorithm(OpKind::Broadcast, e.bytes, link_, options_, world_);
  } else if (a == Algorithm::Auto && record.kind == OpKind::AllGather) {
    a = auto_algorithm(OpKind::AllGather, e.bytes, link_, options_, world_);
  } else if (a == Algorithm::Auto && !is_broadcast(record.kind)) {
    a = Algorithm::Direct;  // the collectives with one algorithm; barrier: the agreement itself
  }
  e.algorithm = static_cast<std::uint8_t>(a);
  if (a == Algorithm::Ring && world_ > 1) {
    // A ring moves chunks of bytes / world, each in messages of at most segment_bytes.
    const std::uint64_t chunk =
        (e.bytes + static_cast<std::uint64_t>(world_) - 1) / static_cast<std::uint64_t>(world_);
    const std::uint64_t segment = is_broadcast(record.kind)
                                      ? options_.segment_bytes
                                      : ring_segment_bytes(options_, world_, link_);
    e.segments =
        static_cast<std::int64_t>(std::max<std::uint64_t>(1, (chunk + segment - 1) / segment));
  }
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.ok = ok;
  note_longest_wait(e);
  return e;
}

void CallObserver::finish(const CallRecord& record, std::span<const CallRecord> records,
                          std::int64_t start_ns, bool ok) noexcept {
  const std::int64_t end_ns = trace_.now_ns();
  log_refusals();
  const bool tracing = trace_.enabled();
  const bool logging = log_.enabled(DebugLevel::Trace);
  // The common case: statistics only (broadcast and all_gather resolve Auto in event_of).
  if (!tracing && !logging && !is_broadcast(record.kind) && record.kind != OpKind::AllGather) {
    const std::uint8_t a =
        record.algorithm != 0 ? record.algorithm : static_cast<std::uint8_t>(Algorithm::Direct);
    stats_.add(static_cast<int>(record.kind), a, record_bytes(record), end_ns - start_ns, ok);
    return;
  }
  try {
    const TraceEvent e = event_of(record, records, start_ns, end_ns, ok);
    stats_.add(static_cast<int>(record.kind), e.algorithm, e.bytes, end_ns - start_ns, ok);
    if (tracing) trace_.record(e);
    if (logging) log_.write(DebugLevel::Trace, describe_trace_event(e));
  } catch (...) {  // a lost event is only a gap in the trace
  }
}

void CallObserver::finish_point_to_point(bool sending, int peer, const char* label,
                                         std::uint64_t bytes, std::int64_t start_ns,
                                         bool ok) noexcept {
  const std::int64_t end_ns = trace_.now_ns();
  stats_.add(sending ? CollectiveStats::kSend : CollectiveStats::kRecv, 0, bytes, end_ns - start_ns,
             ok);
  const bool tracing = trace_.enabled();
  const bool logging = log_.enabled(DebugLevel::Trace);
  if (!tracing && !logging) return;
  try {
    TraceEvent e;
    e.type = TraceEventType::PointToPoint;
    CallRecord::set_text(e.name, label);
    e.peer = peer;
    e.bytes = bytes;
    e.start_ns = start_ns;
    e.end_ns = end_ns;
    e.ok = ok;
    note_longest_wait(e);
    if (tracing) trace_.record(e);
    if (logging) log_.write(DebugLevel::Trace, describe_trace_event(e));
  } catch (...) {
  }
}

void CallObserver::log_refusals() noexcept {
  if (!log_.enabled(DebugLevel::Warn)) return;
  const std::uint64_t n = net::take_unlogged_auth_refusals();
  if (n == 0) return;
  try {
    log_.write(DebugLevel::Warn,
               str("refused ", n, " connection(s) since the last report (", net::auth_refusals(),
                   " in this process), the last: ", net::last_auth_refusal()));
  } catch (...) {
  }
}

void CallObserver::warn_current_exception() noexcept {
  log_refusals();
  if (warned_ || !log_.enabled(DebugLevel::Warn)) return;
  warned_ = true;
  try {
    throw;
  } catch (const std::exception& e) {
    log_.write(DebugLevel::Warn, str("the group failed: ", e.what()));
  } catch (...) {
    log_.write(DebugLevel::Warn, "the group failed with an exception that is no std::exception");
  }
}

}  // namespace ruccl
