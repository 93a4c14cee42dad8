#pragma once
// BlockAllocator: the bookkeeping of the stream-aware caching device allocator, in plain C++ (no
// CUDA header) over the RawMemory primitives, so it is tested without a GPU. The design follows
// PyTorch's CUDACachingAllocator:
// - sizes round up to a multiple of 512 bytes; requests up to 1 MiB come from the small pool
//   (2 MiB segments), larger ones from the large pool (20 MiB segments below 10 MiB, otherwise a
//   segment of the size rounded up to 2 MiB);
// - a free block is reused only by an allocation on the stream it was allocated on (work queued on
//   one stream runs in order, so the next user cannot overtake the previous one);
// - a block bigger than asked is split (small pool: when at least 512 bytes remain; large pool:
//   when more than 1 MiB remains); neighbours of a segment coalesce again when both are free;
// - record_stream(p, s): the block is also used on stream s; when freed, it returns to the pool
//   only once an event recorded on s then has completed (polled at each allocation);
// - when the device is out of memory, the cached free segments are given back (after waiting for
//   pending events) and the allocation retried once; then OutOfMemoryError names the device, the
//   request and what the allocator holds.
// Thread-safe: one mutex per allocator (one allocator per device).
#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda/memory/memory_stats.h"
#include "cuda/memory/pending_frees.h"
#include "cuda/memory/raw_memory.h"

namespace ruccl::cuda {

class BlockAllocator {
 public:
  /// Every block size is a multiple of this.
  static constexpr std::size_t kMinBlockSize = 512;
  /// Requests up to this size are served from the small pool.
  static constexpr std::size_t kSmallSize = std::size_t{1} << 20;
  /// Segment size of the small pool.
  static constexpr std::size_t kSmallSegment = std::size_t{2} << 20;
  /// Large requests below this share a kLargeSegment segment.
  static constexpr std::size_t kMinLargeAlloc = std::size_t{10} << 20;
  /// Segment size for large requests below kMinLargeAlloc.
  static constexpr std::size_t kLargeSegment = std::size_t{20} << 20;
  /// Larger requests get a segment of their own, rounded up to a multiple of this.
  static constexpr std::size_t kRoundLarge = std::size_t{2} << 20;

  /// `device` names the device in messages ("cuda:0").
  BlockAllocator(std::unique_ptr<RawMemory> raw, std::string device);
  /// Gives the cached segments back (waiting for pending events first). Blocks still handed out
  /// are not the allocator's to free: their memory stays with the device.
  ~BlockAllocator();
  BlockAllocator(const BlockAllocator&) = delete;
  BlockAllocator& operator=(const BlockAllocator&) = delete;

  /// At least `nbytes` bytes for use on `stream`, or nullptr for 0 bytes. Throws
  /// OutOfMemoryError when the device cannot provide them even after the cache is freed.
  void* allocate(std::size_t nbytes, StreamId stream);
  /// Gives a block back. It is reusable at once by its own stream, or once the streams recorded
  /// with record_stream have finished the work queued on them before this call. Throws
  /// InternalError for a pointer this allocator did not hand out (or already freed).
  void free(void* ptr);
  /// Notes that the block at `ptr` (handed out, not freed) is used on `stream` as well.
  /// Throws ValueError for a pointer this allocator does not have handed out.
  void record_stream(void* ptr, StreamId stream);
  /// Gives every fully free segment back to the device, after waiting for pending events.
  void empty_cache();

  MemoryStats stats() const;
  /// Sets the peaks to the current values.
  void reset_peak_stats();
  /// The rounded size of the handed-out block at `ptr` (ValueError if none).
  std::size_t block_size(const void* ptr) const;
  /// Blocks freed by their callers that wait for events of other streams.
  std::size_t pending_blocks() const;
  /// The device name given at construction.
  const std::string& device() const { return device_; }

  /// `nbytes` rounded up to a multiple of kMinBlockSize (at least kMinBlockSize); OutOfMemoryError
  /// when that does not fit in size_t.
  static std::size_t round_size(std::size_t nbytes);
  /// The segment size asked of the device for a block of `size` (already rounded) bytes.
  static std::size_t segment_size(std::size_t size);

 private:
  struct Block;
  struct BlockOrder {
    bool operator()(const Block* a, const Block* b) const;
  };
  struct Pool {
    std::set<Block*, BlockOrder> blocks;
    bool small = false;
  };

  Block* find_free_block(Pool& pool, std::size_t size, StreamId stream);
  Block* allocate_segment(Pool& pool, std::size_t size, std::size_t nbytes, StreamId stream);
  bool should_split(const Block& block, std::size_t size) const;
  void split(Block* block, std::size_t size);
  void free_block(Block* block);
  void try_merge(Block* block, Block* neighbour);
  void release_cached_blocks();
  void release_pool(Pool& pool);
  [[noreturn]] void throw_out_of_memory(std::size_t nbytes, std::size_t size);
  Block* handed_out(const void* ptr, const char* op) const;

  std::unique_ptr<RawMemory> raw_;
  std::string device_;
  mutable std::mutex mutex_;
  Pool small_pool_;
  Pool large_pool_;
  std::unordered_map<const void*, Block*> allocated_;
  PendingFrees<Block> pending_;
  /// Blocks freed whose events could not be recorded: never reused, kept to be deleted at the end.
  std::vector<Block*> never_reused_;
  MemoryStats stats_;
};

}  // namespace ruccl::cuda
