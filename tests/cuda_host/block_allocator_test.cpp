// The caching device allocator's bookkeeping (cuda/memory/block_allocator.h) over a fake device:
// no GPU needed. Sizes and segment sizes are PyTorch's CUDACachingAllocator defaults.
#include "cuda/memory/block_allocator.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tensor/core/error.h"
#include "tests/cuda_host/fake_raw_memory.h"

namespace {

using ruccl::cuda::BlockAllocator;
using ruccl::cuda::StreamId;
using ruccl::cuda::testing::FakeDeviceMemory;
using ruccl::cuda::testing::FakeDeviceState;

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * 1024;
constexpr StreamId kS1 = 0x1001;
constexpr StreamId kS2 = 0x1002;
constexpr StreamId kS3 = 0x1003;

struct Fixture {
  std::shared_ptr<FakeDeviceState> device = std::make_shared<FakeDeviceState>();
  BlockAllocator allocator{std::make_unique<FakeDeviceMemory>(device), "cuda:0"};
};

char* as_bytes(void* ptr) { return static_cast<char*>(ptr); }

}  // namespace

TEST_CASE("sizes round up to 512-byte multiples and pick the pool's segment size", "[cuda_host]") {
  CHECK(BlockAllocator::round_size(1) == 512);
  CHECK(BlockAllocator::round_size(512) == 512);
  CHECK(BlockAllocator::round_size(513) == 1024);
  CHECK(BlockAllocator::round_size(1000) == 1024);
  CHECK(BlockAllocator::segment_size(512) == 2 * kMiB);
  CHECK(BlockAllocator::segment_size(1 * kMiB) == 2 * kMiB);
  CHECK(BlockAllocator::segment_size(1 * kMiB + 512) == 20 * kMiB);
  CHECK(BlockAllocator::segment_size(10 * kMiB - 512) == 20 * kMiB);
  CHECK(BlockAllocator::segment_size(10 * kMiB) == 10 * kMiB);
  CHECK(BlockAllocator::segment_size(10 * kMiB + 512) == 12 * kMiB);

  Fixture f;
  void* tiny = f.allocator.allocate(1, kS1);
  void* odd = f.allocator.allocate(1000, kS1);
  void* small_max = f.allocator.allocate(1 * kMiB, kS1);
  CHECK(f.allocator.block_size(tiny) == 512);
  CHECK(f.allocator.block_size(odd) == 1024);
  CHECK(f.allocator.block_size(small_max) == 1 * kMiB);
  // All three fit one 2 MiB small segment, carved in address order.
  CHECK(f.allocator.stats().num_device_allocs == 1);
  CHECK(as_bytes(odd) == as_bytes(tiny) + 512);
  CHECK(as_bytes(small_max) == as_bytes(odd) + 1024);
  void* large = f.allocator.allocate(1 * kMiB + 1, kS1);
  CHECK(f.allocator.block_size(large) == 1 * kMiB + 512);
  CHECK(f.allocator.stats().num_device_allocs == 2);
  CHECK(f.allocator.stats().reserved_bytes == 22 * kMiB);
  CHECK(f.device->live.at(reinterpret_cast<std::uintptr_t>(large)) == 20 * kMiB);
}

TEST_CASE("a freed block is reused by the next allocation on its stream without a device call",
          "[cuda_host]") {
  Fixture f;
  void* first = f.allocator.allocate(4096, kS1);
  f.allocator.free(first);
  void* again = f.allocator.allocate(3000, kS1);
  CHECK(again == first);
  CHECK(f.allocator.stats().num_device_allocs == 1);
  CHECK(f.allocator.stats().num_cache_hits == 1);
  CHECK(f.device->allocate_calls == 1);
}

TEST_CASE("a free block of one stream is never handed to an allocation on another stream",
          "[cuda_host]") {
  Fixture f;
  void* on_s1 = f.allocator.allocate(4096, kS1);
  f.allocator.free(on_s1);
  void* on_s2 = f.allocator.allocate(4096, kS2);
  // A segment of its own: not inside the 2 MiB segment of stream 1.
  const bool inside =
      as_bytes(on_s2) >= as_bytes(on_s1) && as_bytes(on_s2) < as_bytes(on_s1) + 2 * kMiB;
  CHECK_FALSE(inside);
  CHECK(f.allocator.stats().num_device_allocs == 2);
  CHECK(f.allocator.stats().num_cache_hits == 0);
  // Stream 1's block is still there for stream 1.
  CHECK(f.allocator.allocate(4096, kS1) == on_s1);
  // Whatever order the streams have in the pool: a whole cached segment of stream 2 is no
  // candidate for stream 1 (ordered before it) nor stream 3 (after it).
  void* whole = f.allocator.allocate(20 * kMiB, kS2);
  f.allocator.free(whole);
  void* before = f.allocator.allocate(20 * kMiB, kS1);
  void* after = f.allocator.allocate(20 * kMiB, kS3);
  CHECK(before != whole);
  CHECK(after != whole);
  CHECK(f.allocator.stats().num_device_allocs == 5);
  CHECK(f.allocator.allocate(20 * kMiB, kS2) == whole);
}

TEST_CASE("freed neighbours coalesce so their segment serves a bigger request and empties whole",
          "[cuda_host]") {
  Fixture f;
  std::vector<void*> quarter;
  for (int i = 0; i < 4; ++i) {
    quarter.push_back(f.allocator.allocate(256 * kKiB, kS1));
  }
  for (int i = 1; i < 4; ++i) {
    CHECK(as_bytes(quarter[i]) == as_bytes(quarter[0]) + i * 256 * kKiB);
  }
  f.allocator.free(quarter[1]);
  f.allocator.free(quarter[2]);
  // The two freed neighbours are one 512 KiB block now: the best fit for 512 KiB.
  void* merged = f.allocator.allocate(512 * kKiB, kS1);
  CHECK(merged == quarter[1]);
  CHECK(f.allocator.block_size(merged) == 512 * kKiB);
  CHECK(f.allocator.stats().num_device_allocs == 1);
  // Partly used segments stay; once every block is free, the segment is whole again and goes.
  f.allocator.free(quarter[0]);
  f.allocator.empty_cache();
  CHECK(f.allocator.stats().num_device_frees == 0);
  f.allocator.free(merged);
  f.allocator.free(quarter[3]);
  f.allocator.empty_cache();
  CHECK(f.allocator.stats().num_device_frees == 1);
  CHECK(f.allocator.stats().reserved_bytes == 0);
  CHECK(f.device->live_segments() == 0);
}

TEST_CASE("a large block is split only when more than 1 MiB would remain", "[cuda_host]") {
  Fixture f;
  void* five = f.allocator.allocate(5 * kMiB, kS1);
  CHECK(f.allocator.block_size(five) == 5 * kMiB);  // from a 20 MiB segment, 15 MiB remain
  void* rest = f.allocator.allocate(14 * kMiB + 512 * kKiB, kS1);
  CHECK(as_bytes(rest) == as_bytes(five) + 5 * kMiB);
  CHECK(f.allocator.block_size(rest) == 15 * kMiB);  // 512 KiB would remain: not split
  CHECK(f.allocator.stats().num_device_allocs == 1);
  f.allocator.free(five);
  f.allocator.free(rest);
  void* big = f.allocator.allocate(18 * kMiB, kS1);
  CHECK(big == five);
  CHECK(f.allocator.block_size(big) == 18 * kMiB);  // 2 MiB remain: split
  void* tail = f.allocator.allocate(1 * kMiB + 512, kS1);
  CHECK(f.allocator.block_size(tail) == 2 * kMiB);  // 1 MiB - 512 would remain: not split
  CHECK(f.allocator.stats().num_device_allocs == 1);
  // Small requests never come from the large pool.
  f.allocator.free(tail);
  void* small = f.allocator.allocate(512 * kKiB, kS1);
  CHECK(f.allocator.stats().num_device_allocs == 2);
  CHECK(f.device->live.at(reinterpret_cast<std::uintptr_t>(small)) == 2 * kMiB);
}

TEST_CASE("a block used on another stream is reused only after that stream's recorded work is done",
          "[cuda_host]") {
  Fixture f;
  void* block = f.allocator.allocate(512, kS1);
  f.allocator.record_stream(block, kS2);
  f.allocator.record_stream(block, kS2);  // once per stream is enough
  f.allocator.free(block);
  CHECK(f.allocator.pending_blocks() == 1);
  CHECK(f.device->live_events() == 1);
  void* meanwhile = f.allocator.allocate(512, kS1);
  CHECK(meanwhile != block);
  f.device->complete(kS2);
  void* after = f.allocator.allocate(512, kS1);
  CHECK(after == block);
  CHECK(f.allocator.pending_blocks() == 0);
  CHECK(f.device->live_events() == 0);  // the event went back to the adapter
}

TEST_CASE("a block used on several streams waits for every one of them", "[cuda_host]") {
  Fixture f;
  void* block = f.allocator.allocate(512, kS1);
  f.allocator.record_stream(block, kS2);
  f.allocator.record_stream(block, kS3);
  f.allocator.free(block);
  f.device->complete(kS2);
  CHECK(f.allocator.allocate(512, kS1) != block);
  CHECK(f.allocator.pending_blocks() == 1);
  f.device->complete(kS3);
  CHECK(f.allocator.allocate(512, kS1) == block);
  CHECK(f.allocator.pending_blocks() == 0);
}

TEST_CASE("record_stream with the block's own stream records no event", "[cuda_host]") {
  Fixture f;
  void* block = f.allocator.allocate(512, kS1);
  f.allocator.record_stream(block, kS1);
  f.allocator.free(block);
  CHECK(f.allocator.pending_blocks() == 0);
  CHECK(f.device->live_events() == 0);
  CHECK(f.allocator.allocate(512, kS1) == block);
}

TEST_CASE("out of device memory the cached segments are given back and the allocation retried",
          "[cuda_host]") {
  Fixture f;
  f.device->capacity = 22 * kMiB;
  f.allocator.free(f.allocator.allocate(5 * kMiB, kS1));  // a cached 20 MiB segment
  void* fresh = f.allocator.allocate(15 * kMiB, kS2);     // needs 16 MiB: only without the cache
  CHECK(fresh != nullptr);
  const auto stats = f.allocator.stats();
  CHECK(stats.num_alloc_retries == 1);
  CHECK(stats.num_device_frees == 1);
  CHECK(stats.num_device_allocs == 2);
  CHECK(stats.reserved_bytes == 16 * kMiB);
  CHECK(stats.num_ooms == 0);
  CHECK(f.device->failed_allocations == 1);
}

TEST_CASE("a block waiting for another stream is waited for when memory runs out", "[cuda_host]") {
  Fixture f;
  f.device->capacity = 22 * kMiB;
  void* shared = f.allocator.allocate(5 * kMiB, kS1);
  f.allocator.record_stream(shared, kS2);
  f.allocator.free(shared);
  CHECK(f.allocator.pending_blocks() == 1);
  CHECK(f.allocator.allocate(15 * kMiB, kS3) != nullptr);
  CHECK(f.device->synchronize_calls == 1);
  CHECK(f.allocator.pending_blocks() == 0);
  CHECK(f.device->live_events() == 0);
  CHECK(f.allocator.stats().reserved_bytes == 16 * kMiB);
}

TEST_CASE("OutOfMemoryError names the device, the request and what the allocator holds",
          "[cuda_host]") {
  Fixture f;
  f.device->capacity = 22 * kMiB;
  void* held = f.allocator.allocate(5 * kMiB, kS1);
  try {
    f.allocator.allocate(15 * kMiB, kS2);  // stream 2 cannot use stream 1's free 15 MiB
    FAIL("expected OutOfMemoryError");
  } catch (const ruccl::OutOfMemoryError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("CUDA out of memory on cuda:0") != std::string::npos);
    CHECK(what.find("tried to allocate 15.00 MiB (15728640 bytes, a segment of 16.00 MiB)") !=
          std::string::npos);
    CHECK(what.find("5.00 MiB allocated (5242880 bytes)") != std::string::npos);
    CHECK(what.find("20.00 MiB reserved (20971520 bytes) after giving its free cache back "
                    "(15.00 MiB of it free in segments partly in use") != std::string::npos);
    CHECK(what.find("the device has 2.00 MiB free of 22.00 MiB") != std::string::npos);
  }
  auto stats = f.allocator.stats();
  CHECK(stats.num_ooms == 1);
  CHECK(stats.num_alloc_retries == 1);
  CHECK(stats.allocated_bytes == 5 * kMiB);
  // The bookkeeping is intact: once the block is free, the same request fits.
  f.allocator.free(held);
  CHECK(f.allocator.allocate(15 * kMiB, kS2) != nullptr);
  CHECK(f.allocator.stats().reserved_bytes == 16 * kMiB);
}

TEST_CASE("a request larger than any device is refused without asking the device", "[cuda_host]") {
  Fixture f;
  CHECK_THROWS_AS(f.allocator.allocate(std::numeric_limits<std::size_t>::max(), kS1),
                  ruccl::OutOfMemoryError);
  CHECK(f.device->allocate_calls == 0);
  CHECK(f.allocator.stats().num_ooms == 1);
}

TEST_CASE("zero-byte allocations return nullptr and count nothing", "[cuda_host]") {
  Fixture f;
  CHECK(f.allocator.allocate(0, kS1) == nullptr);
  CHECK(f.allocator.stats().num_allocations == 0);
  CHECK(f.device->allocate_calls == 0);
}

TEST_CASE("statistics count allocations frees cache hits and device calls and peaks reset",
          "[cuda_host]") {
  Fixture f;
  void* a = f.allocator.allocate(1000, kS1);
  auto s = f.allocator.stats();
  CHECK(s.allocated_bytes == 1024);
  CHECK(s.requested_bytes == 1000);
  CHECK(s.reserved_bytes == 2 * kMiB);
  CHECK(s.active_blocks == 1);
  CHECK(s.segments == 1);
  CHECK(s.num_allocations == 1);
  CHECK(s.num_device_allocs == 1);
  CHECK(s.num_cache_hits == 0);
  void* b = f.allocator.allocate(3 * kMiB, kS1);
  f.allocator.free(b);
  s = f.allocator.stats();
  CHECK(s.allocated_bytes == 1024);
  CHECK(s.peak_allocated_bytes == 1024 + 3 * kMiB);
  CHECK(s.reserved_bytes == 22 * kMiB);
  CHECK(s.cached_bytes() == 22 * kMiB - 1024);
  CHECK(s.num_frees == 1);
  f.allocator.reset_peak_stats();
  s = f.allocator.stats();
  CHECK(s.peak_allocated_bytes == 1024);
  CHECK(s.peak_reserved_bytes == 22 * kMiB);
  void* c = f.allocator.allocate(2 * kMiB, kS1);  // from the cached large segment
  s = f.allocator.stats();
  CHECK(s.num_cache_hits == 1);
  CHECK(s.num_allocations == 3);
  CHECK(s.num_device_allocs == 2);
  f.allocator.empty_cache();  // both segments partly in use: nothing to give back
  CHECK(f.allocator.stats().num_device_frees == 0);
  f.allocator.free(a);
  f.allocator.free(c);
  f.allocator.empty_cache();
  s = f.allocator.stats();
  CHECK(s.num_device_frees == 2);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.segments == 0);
  CHECK(s.active_blocks == 0);
  CHECK(s.peak_reserved_bytes == 22 * kMiB);
  CHECK(f.device->live_segments() == 0);
}

TEST_CASE("freeing memory the allocator did not hand out is refused", "[cuda_host]") {
  Fixture f;
  void* block = f.allocator.allocate(512, kS1);
  f.allocator.free(block);
  CHECK_THROWS_AS(f.allocator.free(block), ruccl::InternalError);  // a second free
  int on_stack = 0;
  CHECK_THROWS_AS(f.allocator.free(&on_stack), ruccl::InternalError);
  CHECK_THROWS_AS(f.allocator.record_stream(&on_stack, kS2), ruccl::ValueError);
  CHECK_THROWS_AS(f.allocator.block_size(&on_stack), ruccl::ValueError);
  CHECK(f.allocator.stats().num_frees == 1);
}

TEST_CASE("destroying the allocator gives every free segment back, waiting for pending events",
          "[cuda_host]") {
  auto device = std::make_shared<FakeDeviceState>();
  {
    BlockAllocator allocator(std::make_unique<FakeDeviceMemory>(device), "cuda:0");
    allocator.free(allocator.allocate(4 * kMiB, kS1));
    void* shared = allocator.allocate(512, kS1);
    allocator.record_stream(shared, kS2);
    allocator.free(shared);
    CHECK(device->live_segments() == 2);
  }
  CHECK(device->live_segments() == 0);
  CHECK(device->live_events() == 0);
  CHECK(device->synchronize_calls == 1);
}

TEST_CASE("concurrent allocations and frees on several streams never hand out overlapping blocks",
          "[cuda_host]") {
  Fixture f;
  std::mutex mutex;
  std::map<std::uintptr_t, std::uintptr_t> live;  // start -> end of blocks handed out
  std::vector<std::string> failures;
  constexpr int kThreads = 4;
  auto worker = [&](int id) {
    std::mt19937 random(static_cast<unsigned>(id) + 1);
    std::uniform_int_distribution<std::size_t> size(1, 3 * kMiB);
    std::vector<void*> mine;
    const StreamId own = kS1 + static_cast<StreamId>(id);
    for (int step = 0; step < 1500; ++step) {
      if (mine.size() < 8 && (random() % 3 != 0 || mine.empty())) {
        const std::size_t n = size(random);
        void* p = f.allocator.allocate(n, own);
        const auto start = reinterpret_cast<std::uintptr_t>(p);
        const std::lock_guard<std::mutex> lock(mutex);
        auto next = live.lower_bound(start);
        const bool overlaps = (next != live.end() && next->first < start + n) ||
                              (next != live.begin() && std::prev(next)->second > start);
        if (overlaps) {
          failures.push_back("overlap at step " + std::to_string(step));
        }
        live.emplace(start, start + n);
        mine.push_back(p);
      } else {
        void* p = mine.back();
        mine.pop_back();
        if (random() % 4 == 0) {
          f.allocator.record_stream(p, kS1 + static_cast<StreamId>((id + 1) % kThreads));
        }
        {
          const std::lock_guard<std::mutex> lock(mutex);
          live.erase(reinterpret_cast<std::uintptr_t>(p));
        }
        f.allocator.free(p);
        if (random() % 16 == 0) {
          f.device->complete(own);
        }
      }
    }
    for (void* p : mine) {
      {
        const std::lock_guard<std::mutex> lock(mutex);
        live.erase(reinterpret_cast<std::uintptr_t>(p));
      }
      f.allocator.free(p);
    }
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back(worker, id);
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(failures.empty());
  const auto s = f.allocator.stats();
  CHECK(s.allocated_bytes == 0);
  CHECK(s.active_blocks == 0);
  CHECK(s.num_allocations == s.num_frees);
  f.allocator.empty_cache();
  CHECK(f.allocator.stats().reserved_bytes == 0);
  CHECK(f.device->live_segments() == 0);
  CHECK(f.device->live_events() == 0);
}

TEST_CASE("a device failure other than out of memory propagates and leaves the bookkeeping intact",
          "[cuda_host]") {
  Fixture f;
  void* held = f.allocator.allocate(512, kS1);
  f.device->fail_next_allocate = true;
  CHECK_THROWS_WITH(f.allocator.allocate(4 * kMiB, kS1), Catch::Contains("injected"));
  auto s = f.allocator.stats();
  CHECK(s.num_alloc_retries == 0);  // only out of memory is retried
  CHECK(s.num_ooms == 0);
  CHECK(s.num_allocations == 1);
  CHECK(s.reserved_bytes == 2 * kMiB);
  void* large = f.allocator.allocate(4 * kMiB, kS1);
  CHECK(large != nullptr);
  // An event that cannot be recorded: the block is never reused (nothing orders the other
  // stream's work before its next user) and stays reserved; everything else goes on.
  f.allocator.record_stream(held, kS2);
  f.device->fail_next_record = true;
  CHECK_THROWS_WITH(f.allocator.free(held), Catch::Contains("injected"));
  s = f.allocator.stats();
  CHECK(s.num_frees == 1);
  CHECK(s.allocated_bytes == 4 * kMiB);
  CHECK(f.allocator.pending_blocks() == 0);
  void* next = f.allocator.allocate(512, kS1);
  CHECK(next != held);
  f.allocator.free(next);
  f.allocator.free(large);
  f.allocator.empty_cache();
  CHECK(f.allocator.stats().reserved_bytes == 2 * kMiB);  // held's segment stays
}
