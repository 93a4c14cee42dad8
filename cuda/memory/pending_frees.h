#pragma once
// PendingFrees: what the caching allocators (device blocks, pinned buffers) keep for memory freed
// while other streams may still use it. Each such item waits for one event per stream that used it
// (recorded at its free); it is reusable once all of them have completed. Events of one stream
// complete in record order, so each stream's queue is polled from its front and the poll stops at
// the first event not done (as PyTorch's allocator does). Plain C++ over RawMemory; not
// thread-safe on its own: the allocator's lock guards it.
#include <cstddef>
#include <deque>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include "cuda/memory/raw_memory.h"

namespace ruccl::cuda {

/// `Item` has an `int pending_events` member, counted here.
template <typename Item>
class PendingFrees {
 public:
  /// Records an event on each of `streams` for `item`. When a record throws, the events already
  /// recorded still order the item's reuse; if none was recorded, the item is not pending (the
  /// caller decides its fate) and the exception propagates.
  void add(RawMemory& raw, const std::vector<StreamId>& streams, Item* item) {
    ++items_;
    try {
      for (const StreamId stream : streams) {
        const EventId event = raw.record_event(stream);
        ++item->pending_events;
        queues_[stream].emplace_back(event, item);
      }
    } catch (...) {
      if (item->pending_events == 0) {
        --items_;
      }
      throw;
    }
  }

  /// Hands every item whose events have all completed to `done(item)`, without blocking.
  template <typename Done>
  void poll(RawMemory& raw, Done&& done) {
    for (auto it = queues_.begin(); it != queues_.end();) {
      auto& queue = it->second;
      while (!queue.empty() && raw.event_ready(queue.front().first)) {
        complete_front(raw, queue, done);
      }
      it = queue.empty() ? queues_.erase(it) : std::next(it);
    }
  }

  /// Waits for every event, handing each item to `done(item)` once its last event completed.
  template <typename Done>
  void drain(RawMemory& raw, Done&& done) {
    for (auto it = queues_.begin(); it != queues_.end();) {
      auto& queue = it->second;
      while (!queue.empty()) {
        raw.synchronize_event(queue.front().first);
        complete_front(raw, queue, done);
      }
      it = queues_.erase(it);
    }
  }

  /// Items waiting for events.
  std::size_t items() const { return items_; }

  /// Calls `visit(item)` for each entry (an item with several events more than once).
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const auto& [stream, queue] : queues_) {
      for (const auto& [event, item] : queue) {
        visit(item);
      }
    }
  }

 private:
  using Queue = std::deque<std::pair<EventId, Item*>>;

  template <typename Done>
  void complete_front(RawMemory& raw, Queue& queue, Done& done) {
    const auto [event, item] = queue.front();
    queue.pop_front();
    raw.release_event(event);
    if (--item->pending_events == 0) {
      --items_;
      done(item);
    }
  }

  std::map<StreamId, Queue> queues_;
  std::size_t items_ = 0;
};

}  // namespace ruccl::cuda
