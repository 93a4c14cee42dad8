#include "cuda/memory/host_block_pool.h"

#include <bit>
#include <limits>
#include <set>

#include "tensor/core/error.h"

namespace ruccl::cuda {
namespace {

/// The largest power of two a size_t holds: requests above it have no size class.
constexpr std::size_t kLargestClass = (std::numeric_limits<std::size_t>::max() >> 1) + 1;

}  // namespace

HostBlockPool::HostBlockPool(std::unique_ptr<RawMemory> raw) : raw_(std::move(raw)) {
  RUCCL_ASSERT(raw_ != nullptr, "HostBlockPool needs its raw memory primitives");
}

HostBlockPool::~HostBlockPool() {
  try {
    release_cached();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor cannot throw; the driver is gone
  }
  std::set<Buffer*> left;
  for (const auto& [size, buffers] : free_) {
    left.insert(buffers.begin(), buffers.end());
  }
  for (const auto& [ptr, buffer] : allocated_) {
    left.insert(buffer);
  }
  pending_.for_each([&](Buffer* buffer) { left.insert(buffer); });
  left.insert(never_reused_.begin(), never_reused_.end());
  for (Buffer* buffer : left) {
    delete buffer;
  }
}

std::size_t HostBlockPool::size_class(std::size_t nbytes) {
  RUCCL_CHECK(nbytes <= kLargestClass, OutOfMemoryError, "pinned host memory: tried to allocate ",
              nbytes, " bytes, more than any host has");
  return std::max(kMinBufferSize, std::bit_ceil(nbytes));
}

void* HostBlockPool::allocate(std::size_t nbytes) {
  if (nbytes == 0) {
    return nullptr;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  if (nbytes > kLargestClass) {
    ++stats_.num_ooms;  // size_class throws OutOfMemoryError
  }
  const std::size_t size = size_class(nbytes);
  pending_.poll(*raw_, [this](Buffer* done) { to_free_list(done); });
  Buffer* buffer = nullptr;
  const auto it = free_.find(size);
  if (it != free_.end() && !it->second.empty()) {
    buffer = it->second.back();
    it->second.pop_back();
    ++stats_.num_cache_hits;
  } else {
    void* ptr = raw_->allocate(size);
    if (ptr == nullptr) {
      ++stats_.num_alloc_retries;
      release_cached();
      ptr = raw_->allocate(size);
    }
    if (ptr == nullptr) {
      ++stats_.num_ooms;
      throw OutOfMemoryError(
          str("pinned host memory: out of memory: tried to allocate ", format_bytes(nbytes), " (",
              nbytes, " bytes, a buffer of ", format_bytes(size), "); the pinned pool has ",
              format_bytes(stats_.allocated_bytes), " in use (", stats_.allocated_bytes,
              " bytes) and ", format_bytes(stats_.reserved_bytes), " pinned (",
              stats_.reserved_bytes, " bytes) after giving its free cache back"));
    }
    buffer = new Buffer;
    buffer->ptr = ptr;
    buffer->size = size;
    ++stats_.num_device_allocs;
    ++stats_.segments;
    stats_.reserved_bytes += size;
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  }
  buffer->requested = nbytes;
  allocated_.emplace(buffer->ptr, buffer);
  ++stats_.num_allocations;
  ++stats_.active_blocks;
  stats_.allocated_bytes += size;
  stats_.requested_bytes += nbytes;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return buffer->ptr;
}

void HostBlockPool::to_free_list(Buffer* buffer) { free_[buffer->size].push_back(buffer); }

void HostBlockPool::free(void* ptr) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocated_.find(ptr);
  RUCCL_ASSERT(it != allocated_.end(), "pinned host memory: free of ", ptr,
               ", which the pool has not handed out (freed twice, or not from this pool)");
  Buffer* buffer = it->second;
  allocated_.erase(it);
  ++stats_.num_frees;
  --stats_.active_blocks;
  stats_.allocated_bytes -= buffer->size;
  stats_.requested_bytes -= buffer->requested;
  buffer->requested = 0;
  if (buffer->stream_uses.empty()) {
    to_free_list(buffer);
    return;
  }
  // Nothing orders the reuse of a buffer whose events could not be recorded: it is never reused.
  const std::vector<StreamId> uses = std::move(buffer->stream_uses);
  buffer->stream_uses.clear();
  try {
    pending_.add(*raw_, uses, buffer);
  } catch (...) {
    if (buffer->pending_events == 0) {
      never_reused_.push_back(buffer);
    }
    throw;
  }
}

void HostBlockPool::record_stream(void* ptr, StreamId stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  Buffer* buffer = handed_out(ptr, "record_stream");
  for (const StreamId use : buffer->stream_uses) {
    if (use == stream) {
      return;
    }
  }
  buffer->stream_uses.push_back(stream);
}

void HostBlockPool::release_cached() {
  pending_.drain(*raw_, [this](Buffer* done) { to_free_list(done); });
  for (auto& [size, buffers] : free_) {
    while (!buffers.empty()) {
      Buffer* buffer = buffers.back();
      raw_->deallocate(buffer->ptr, buffer->size);
      buffers.pop_back();
      ++stats_.num_device_frees;
      --stats_.segments;
      stats_.reserved_bytes -= buffer->size;
      delete buffer;
    }
  }
  free_.clear();
}

void HostBlockPool::empty_cache() {
  const std::lock_guard<std::mutex> lock(mutex_);
  release_cached();
}

HostBlockPool::Buffer* HostBlockPool::handed_out(const void* ptr, const char* op) const {
  const auto it = allocated_.find(ptr);
  RUCCL_CHECK(it != allocated_.end(), ValueError, op,
              ": expected a buffer handed out by the pinned host pool, got ", ptr,
              " (not from it, or already freed)");
  return it->second;
}

MemoryStats HostBlockPool::stats() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void HostBlockPool::reset_peak_stats() {
  const std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

std::size_t HostBlockPool::buffer_size(const void* ptr) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return handed_out(ptr, "buffer_size")->size;
}

std::size_t HostBlockPool::pending_buffers() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return pending_.items();
}

}  // namespace ruccl::cuda
