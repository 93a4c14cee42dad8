#pragma once
// A fake device for the caching allocators' bookkeeping: hands out addresses (no memory behind
// them) up to a capacity, records events per stream and completes them when the test says the
// stream got that far. Its state is shared with the test, which keeps reading it after the
// allocator took ownership of the fake.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "cuda/memory/raw_memory.h"

namespace ruccl::cuda::testing {

struct FakeDeviceState {
  std::mutex mutex;
  std::size_t capacity = std::size_t{1} << 40;  // 1 TiB unless a test sets less
  std::size_t used = 0;
  std::uintptr_t next_address = std::uintptr_t{1} << 32;
  std::map<std::uintptr_t, std::size_t> live;  // address -> bytes
  std::uint64_t allocate_calls = 0;            // including failed ones
  std::uint64_t failed_allocations = 0;
  std::uint64_t deallocate_calls = 0;
  // Events: the stream each was recorded on and its place in that stream's order.
  EventId next_event = 1;
  std::map<EventId, std::pair<StreamId, std::uint64_t>> events;
  std::map<StreamId, std::uint64_t> recorded;   // events recorded per stream
  std::map<StreamId, std::uint64_t> completed;  // of those, how many are done
  std::uint64_t synchronize_calls = 0;
  // Faults: the next allocate or record_event throws (a broken device, not out of memory).
  bool fail_next_allocate = false;
  bool fail_next_record = false;

  /// The stream finished everything queued on it so far.
  void complete(StreamId stream) {
    const std::lock_guard<std::mutex> lock(mutex);
    completed[stream] = recorded[stream];
  }
  std::size_t live_events() {
    const std::lock_guard<std::mutex> lock(mutex);
    return events.size();
  }
  std::size_t live_segments() {
    const std::lock_guard<std::mutex> lock(mutex);
    return live.size();
  }
};

class FakeDeviceMemory final : public RawMemory {
 public:
  explicit FakeDeviceMemory(std::shared_ptr<FakeDeviceState> state) : state_(std::move(state)) {}

  void* allocate(std::size_t nbytes) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->allocate_calls;
    if (std::exchange(state_->fail_next_allocate, false)) {
      throw std::runtime_error("fake device: allocate failed (injected)");
    }
    if (nbytes > state_->capacity - state_->used) {
      ++state_->failed_allocations;
      return nullptr;
    }
    const std::uintptr_t address = state_->next_address;
    // A gap after each segment: segments are never adjacent, so nothing may merge across them.
    state_->next_address += nbytes + (std::uintptr_t{2} << 20);
    state_->used += nbytes;
    state_->live.emplace(address, nbytes);
    return reinterpret_cast<void*>(address);
  }

  void deallocate(void* ptr, std::size_t nbytes) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    const auto it = state_->live.find(reinterpret_cast<std::uintptr_t>(ptr));
    if (it == state_->live.end() || it->second != nbytes) {
      throw std::logic_error("fake device: deallocate of a pointer or size it did not hand out");
    }
    state_->used -= nbytes;
    state_->live.erase(it);
    ++state_->deallocate_calls;
  }

  EventId record_event(StreamId stream) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    if (std::exchange(state_->fail_next_record, false)) {
      throw std::runtime_error("fake device: record_event failed (injected)");
    }
    const EventId event = state_->next_event++;
    state_->events.emplace(event, std::make_pair(stream, ++state_->recorded[stream]));
    return event;
  }

  bool event_ready(EventId event) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    const auto& [stream, order] = known(event);
    return state_->completed[stream] >= order;
  }

  void synchronize_event(EventId event) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    const auto [stream, order] = known(event);
    ++state_->synchronize_calls;
    // Waiting for an event means the stream got at least that far.
    state_->completed[stream] = std::max(state_->completed[stream], order);
  }

  void release_event(EventId event) override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    known(event);
    state_->events.erase(event);
  }

  std::optional<DeviceMemoryInfo> memory_info() override {
    const std::lock_guard<std::mutex> lock(state_->mutex);
    return DeviceMemoryInfo{state_->capacity - state_->used, state_->capacity};
  }

 private:
  const std::pair<StreamId, std::uint64_t>& known(EventId event) const {
    const auto it = state_->events.find(event);
    if (it == state_->events.end()) {
      throw std::logic_error("fake device: use of an event it did not record (or released)");
    }
    return it->second;
  }

  std::shared_ptr<FakeDeviceState> state_;
};

}  // namespace ruccl::cuda::testing
