#include "cuda/memory/block_allocator.h"

#include <limits>
#include <tuple>

#include "tensor/core/error.h"

namespace ruccl::cuda {

/// A piece of a segment: handed out, free in its pool, or waiting for events. The blocks of one
/// segment form a list in address order (prev/next) and share the segment's stream.
struct BlockAllocator::Block {
  std::size_t size = 0;
  StreamId stream = 0;
  Pool* pool = nullptr;
  char* ptr = nullptr;
  std::size_t requested = 0;  // what the caller asked for, while handed out
  bool allocated = false;
  int pending_events = 0;             // events to complete before it returns to its pool
  Block* prev = nullptr;              // the block just below in the segment
  Block* next = nullptr;              // the block just above in the segment
  std::vector<StreamId> stream_uses;  // other streams that used it (record_stream)
};

bool BlockAllocator::BlockOrder::operator()(const Block* a, const Block* b) const {
  // By stream, then size, then address: lower_bound({stream, size}) is the best fit on a stream.
  return std::tie(a->stream, a->size, a->ptr) < std::tie(b->stream, b->size, b->ptr);
}

namespace {

/// Requests above this are refused before any rounding (no device has that much).
constexpr std::size_t kMaxRequest = std::numeric_limits<std::size_t>::max() / 4;

std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

BlockAllocator::BlockAllocator(std::unique_ptr<RawMemory> raw, std::string device)
    : raw_(std::move(raw)), device_(std::move(device)) {
  RUCCL_ASSERT(raw_ != nullptr, "BlockAllocator needs its raw memory primitives");
  small_pool_.small = true;
}

BlockAllocator::~BlockAllocator() {
  try {
    release_cached_blocks();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor cannot throw; the device is gone
  }
  // Only the bookkeeping of what is left: blocks still handed out keep their device memory.
  std::set<Block*> left;
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    left.insert(pool->blocks.begin(), pool->blocks.end());
  }
  for (const auto& [ptr, block] : allocated_) {
    left.insert(block);
  }
  pending_.for_each([&](Block* block) { left.insert(block); });
  left.insert(never_reused_.begin(), never_reused_.end());
  for (Block* block : left) {
    delete block;
  }
}

std::size_t BlockAllocator::round_size(std::size_t nbytes) {
  RUCCL_CHECK(nbytes <= kMaxRequest, OutOfMemoryError, "caching allocator: tried to allocate ",
              nbytes, " bytes, more than any device has");
  return nbytes < kMinBlockSize ? kMinBlockSize : round_up(nbytes, kMinBlockSize);
}

std::size_t BlockAllocator::segment_size(std::size_t size) {
  if (size <= kSmallSize) {
    return kSmallSegment;
  }
  if (size < kMinLargeAlloc) {
    return kLargeSegment;
  }
  return round_up(size, kRoundLarge);
}

void* BlockAllocator::allocate(std::size_t nbytes, StreamId stream) {
  if (nbytes == 0) {
    return nullptr;
  }
  const std::lock_guard<std::mutex> lock(mutex_);
  if (nbytes > kMaxRequest) {
    ++stats_.num_ooms;
    throw_out_of_memory(nbytes, 0);
  }
  const std::size_t size = round_size(nbytes);
  pending_.poll(*raw_, [this](Block* done) { free_block(done); });
  Pool& pool = size <= kSmallSize ? small_pool_ : large_pool_;
  Block* block = find_free_block(pool, size, stream);
  if (block != nullptr) {
    ++stats_.num_cache_hits;
  } else {
    block = allocate_segment(pool, size, nbytes, stream);
  }
  if (should_split(*block, size)) {
    split(block, size);
  }
  block->allocated = true;
  block->requested = nbytes;
  allocated_.emplace(block->ptr, block);
  ++stats_.num_allocations;
  ++stats_.active_blocks;
  stats_.allocated_bytes += block->size;
  stats_.requested_bytes += nbytes;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return block->ptr;
}

BlockAllocator::Block* BlockAllocator::find_free_block(Pool& pool, std::size_t size,
                                                       StreamId stream) {
  Block key;
  key.stream = stream;
  key.size = size;
  const auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) {
    return nullptr;  // nothing cached on this stream that is big enough
  }
  Block* block = *it;
  pool.blocks.erase(it);
  return block;
}

BlockAllocator::Block* BlockAllocator::allocate_segment(Pool& pool, std::size_t size,
                                                        std::size_t nbytes, StreamId stream) {
  const std::size_t segment = segment_size(size);
  void* ptr = raw_->allocate(segment);
  if (ptr == nullptr) {
    // Out of memory: give the cache back (other streams' free segments too) and try once more.
    ++stats_.num_alloc_retries;
    release_cached_blocks();
    ptr = raw_->allocate(segment);
  }
  if (ptr == nullptr) {
    ++stats_.num_ooms;
    throw_out_of_memory(nbytes, segment);
  }
  auto* block = new Block;
  block->size = segment;
  block->stream = stream;
  block->pool = &pool;
  block->ptr = static_cast<char*>(ptr);
  ++stats_.num_device_allocs;
  ++stats_.segments;
  stats_.reserved_bytes += segment;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  return block;
}

bool BlockAllocator::should_split(const Block& block, std::size_t size) const {
  const std::size_t remaining = block.size - size;
  // A large block keeps a remainder of 1 MiB or less: small requests never come from the large
  // pool, so a small remainder there would only fragment it.
  return block.pool->small ? remaining >= kMinBlockSize : remaining > kSmallSize;
}

void BlockAllocator::split(Block* block, std::size_t size) {
  auto* rest = new Block;
  rest->size = block->size - size;
  rest->stream = block->stream;
  rest->pool = block->pool;
  rest->ptr = block->ptr + size;
  rest->prev = block;
  rest->next = block->next;
  if (block->next != nullptr) {
    block->next->prev = rest;
  }
  block->next = rest;
  block->size = size;
  rest->pool->blocks.insert(rest);
}

void BlockAllocator::try_merge(Block* block, Block* neighbour) {
  if (neighbour == nullptr || neighbour->allocated || neighbour->pending_events > 0) {
    return;
  }
  neighbour->pool->blocks.erase(neighbour);
  if (neighbour == block->prev) {
    block->ptr = neighbour->ptr;
    block->prev = neighbour->prev;
    if (block->prev != nullptr) {
      block->prev->next = block;
    }
  } else {
    block->next = neighbour->next;
    if (block->next != nullptr) {
      block->next->prev = block;
    }
  }
  block->size += neighbour->size;
  delete neighbour;
}

void BlockAllocator::free_block(Block* block) {
  try_merge(block, block->prev);
  try_merge(block, block->next);
  block->pool->blocks.insert(block);
}

void BlockAllocator::free(void* ptr) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto it = allocated_.find(ptr);
  RUCCL_ASSERT(it != allocated_.end(), "caching allocator (", device_, "): free of ", ptr,
               ", which it has not handed out (freed twice, or not from this allocator)");
  Block* block = it->second;
  allocated_.erase(it);
  block->allocated = false;
  ++stats_.num_frees;
  --stats_.active_blocks;
  stats_.allocated_bytes -= block->size;
  stats_.requested_bytes -= block->requested;
  block->requested = 0;
  if (block->stream_uses.empty()) {
    free_block(block);
    return;
  }
  // Used on other streams too: reusable once they finish what they have queued up to now.
  const std::vector<StreamId> uses = std::move(block->stream_uses);
  block->stream_uses.clear();
  try {
    pending_.add(*raw_, uses, block);
  } catch (...) {
    if (block->pending_events == 0) {
      // No event orders its reuse after the other streams: never reuse it (it stays reserved).
      block->allocated = true;
      never_reused_.push_back(block);
    }
    throw;
  }
}

void BlockAllocator::record_stream(void* ptr, StreamId stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  Block* block = handed_out(ptr, "record_stream");
  if (stream == block->stream) {
    return;  // its own stream orders every use already
  }
  for (const StreamId use : block->stream_uses) {
    if (use == stream) {
      return;
    }
  }
  block->stream_uses.push_back(stream);
}

void BlockAllocator::release_pool(Pool& pool) {
  for (auto it = pool.blocks.begin(); it != pool.blocks.end();) {
    Block* block = *it;
    if (block->prev != nullptr || block->next != nullptr) {
      ++it;  // part of a segment still (partly) in use
      continue;
    }
    raw_->deallocate(block->ptr, block->size);
    it = pool.blocks.erase(it);
    ++stats_.num_device_frees;
    --stats_.segments;
    stats_.reserved_bytes -= block->size;
    delete block;
  }
}

void BlockAllocator::release_cached_blocks() {
  pending_.drain(*raw_, [this](Block* done) { free_block(done); });
  release_pool(small_pool_);
  release_pool(large_pool_);
}

void BlockAllocator::empty_cache() {
  const std::lock_guard<std::mutex> lock(mutex_);
  release_cached_blocks();
}

void BlockAllocator::throw_out_of_memory(std::size_t nbytes, std::size_t segment) {
  std::string device_part;
  if (const auto info = raw_->memory_info()) {
    device_part = str("; the device has ", format_bytes(info->free_bytes), " free of ",
                      format_bytes(info->total_bytes));
  }
  const std::string segment_part =
      segment == 0 ? std::string() : str(", a segment of ", format_bytes(segment));
  // What is reserved but not allocated after the cache went back lies in segments partly in use:
  // free space the request did not fit in (or that belongs to other streams).
  const std::size_t stranded = stats_.reserved_bytes - stats_.allocated_bytes;
  const std::string stranded_part =
      stranded == 0 ? std::string()
                    : str(" (", format_bytes(stranded),
                          " of it free in segments partly in use: fragmentation, or other "
                          "streams' blocks)");
  throw OutOfMemoryError(
      str("CUDA out of memory on ", device_, ": tried to allocate ", format_bytes(nbytes), " (",
          nbytes, " bytes", segment_part, "); ruCCL's caching allocator has ",
          format_bytes(stats_.allocated_bytes), " allocated (", stats_.allocated_bytes,
          " bytes) and ", format_bytes(stats_.reserved_bytes), " reserved (", stats_.reserved_bytes,
          " bytes) after giving its free cache back", stranded_part, device_part,
          ". Free tensors no longer needed, or use smaller batches"));
}

BlockAllocator::Block* BlockAllocator::handed_out(const void* ptr, const char* op) const {
  const auto it = allocated_.find(ptr);
  RUCCL_CHECK(it != allocated_.end(), ValueError, op, ": expected memory handed out by the ",
              device_, " caching allocator, got ", ptr, " (not from it, or already freed)");
  return it->second;
}

MemoryStats BlockAllocator::stats() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void BlockAllocator::reset_peak_stats() {
  const std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

std::size_t BlockAllocator::block_size(const void* ptr) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return handed_out(ptr, "block_size")->size;
}

std::size_t BlockAllocator::pending_blocks() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return pending_.items();
}

}  // namespace ruccl::cuda
