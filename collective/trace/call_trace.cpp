#include "collective/trace/call_trace.h"

#include <algorithm>
#include <exception>

#include "collective/common/collective_error.h"

namespace ruccl {

Shape TraceEvent::shape() const {
  Shape s;
  for (int d = 0; d < ndim; ++d) s.push_back(dims[d]);
  return s;
}

TraceRecorder::TraceRecorder()
    : origin_(Clock::now()),
      origin_wall_us_(std::chrono::duration<double, std::micro>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count()) {}

void TraceRecorder::enable(std::size_t capacity) {
  if (capacity == 0) {
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          "TraceRecorder::enable: expected a capacity >= 1, got 0");
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ring_.size() != capacity) {
      // Keep what was recorded, oldest first, as far as the new ring holds it.
      std::vector<TraceEvent> kept;
      const std::uint64_t held = std::min<std::uint64_t>(next_, ring_.size());
      for (std::uint64_t i = next_ - held; i < next_; ++i) kept.push_back(ring_[i % ring_.size()]);
      if (kept.size() > capacity) kept.erase(kept.begin(), kept.end() - capacity);
      ring_.assign(capacity, TraceEvent{});
      std::copy(kept.begin(), kept.end(), ring_.begin());
      next_ = kept.size();
    }
  }
  enabled_.store(true, std::memory_order_relaxed);
}

void TraceRecorder::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  next_ = 0;
}

void TraceRecorder::record(const TraceEvent& event) {
  if (!enabled()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (ring_.empty()) return;
  ring_[next_ % ring_.size()] = event;
  ++next_;
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<TraceEvent> out;
  if (ring_.empty()) return out;
  const std::uint64_t held = std::min<std::uint64_t>(next_, ring_.size());
  out.reserve(held);
  for (std::uint64_t i = next_ - held; i < next_; ++i) out.push_back(ring_[i % ring_.size()]);
  return out;
}

std::uint64_t TraceRecorder::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_ > ring_.size() ? next_ - ring_.size() : 0;
}

TraceSpan::TraceSpan(TraceRecorder& recorder, const char* name, std::int64_t value,
                     const char* category)
    : recorder_(recorder.enabled() ? &recorder : nullptr),
      name_(name),
      category_(category),
      value_(value) {
  if (recorder_ == nullptr) return;
  exceptions_ = std::uncaught_exceptions();
  start_ns_ = recorder_->now_ns();
}

TraceSpan::~TraceSpan() {
  if (recorder_ == nullptr) return;
  TraceEvent e;
  e.type = TraceEventType::Span;
  CallRecord::set_text(e.name, name_);
  CallRecord::set_text(e.category, category_);
  e.value = value_;
  e.start_ns = start_ns_;
  e.end_ns = recorder_->now_ns();
  e.ok = std::uncaught_exceptions() <= exceptions_;
  try {
    recorder_->record(e);
  } catch (...) {  // a destructor never throws; a lost span is only a gap in the trace
  }
}

}  // namespace ruccl
