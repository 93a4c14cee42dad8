// The pinned host buffer cache's bookkeeping (cuda/memory/host_block_pool.h) over a fake: no GPU.
#include "cuda/memory/host_block_pool.h"

#include <catch2/catch.hpp>

#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tensor/core/error.h"
#include "tests/cuda_host/fake_raw_memory.h"

namespace {

using ruccl::cuda::HostBlockPool;
using ruccl::cuda::StreamId;
using ruccl::cuda::testing::FakeDeviceMemory;
using ruccl::cuda::testing::FakeDeviceState;

constexpr std::size_t kMiB = 1024 * 1024;
constexpr StreamId kCopyStream = 0x2001;
constexpr StreamId kOtherStream = 0x2002;

struct Fixture {
  std::shared_ptr<FakeDeviceState> host = std::make_shared<FakeDeviceState>();
  HostBlockPool pool{std::make_unique<FakeDeviceMemory>(host)};
};

}  // namespace

TEST_CASE("pinned buffer sizes round up to a power of two of at least one page", "[cuda_host]") {
  CHECK(HostBlockPool::size_class(1) == 4096);
  CHECK(HostBlockPool::size_class(4096) == 4096);
  CHECK(HostBlockPool::size_class(4097) == 8192);
  CHECK(HostBlockPool::size_class(3 * kMiB) == 4 * kMiB);
  Fixture f;
  void* buffer = f.pool.allocate(5000);
  CHECK(f.pool.buffer_size(buffer) == 8192);
  CHECK(f.host->live.at(reinterpret_cast<std::uintptr_t>(buffer)) == 8192);
}

TEST_CASE("a freed pinned buffer is reused for a request of its size class only", "[cuda_host]") {
  Fixture f;
  void* buffer = f.pool.allocate(6000);
  f.pool.free(buffer);
  CHECK(f.pool.allocate(5000) == buffer);  // same class (8 KiB): a cache hit
  CHECK(f.pool.stats().num_cache_hits == 1);
  CHECK(f.pool.stats().num_device_allocs == 1);
  void* bigger = f.pool.allocate(9000);  // 16 KiB: a new buffer
  CHECK(bigger != buffer);
  CHECK(f.pool.stats().num_device_allocs == 2);
}

TEST_CASE("a pinned buffer used by copies is reused only after their streams' events complete",
          "[cuda_host]") {
  Fixture f;
  void* buffer = f.pool.allocate(1 * kMiB);
  f.pool.record_stream(buffer, kCopyStream);
  f.pool.record_stream(buffer, kOtherStream);
  f.pool.free(buffer);
  CHECK(f.pool.pending_buffers() == 1);
  CHECK(f.host->live_events() == 2);
  f.host->complete(kCopyStream);
  void* second = f.pool.allocate(1 * kMiB);
  CHECK(second != buffer);
  f.pool.free(second);
  f.host->complete(kOtherStream);
  // Both are free now; the pool hands out one of them, without a new cudaHostAlloc.
  void* third = f.pool.allocate(1 * kMiB);
  CHECK((third == buffer || third == second));
  CHECK(f.pool.pending_buffers() == 0);
  CHECK(f.host->live_events() == 0);
  CHECK(f.pool.stats().num_device_allocs == 2);
}

TEST_CASE("out of pinnable memory the pool frees its cache retries and then names the request",
          "[cuda_host]") {
  Fixture f;
  f.host->capacity = 6 * kMiB;
  f.pool.free(f.pool.allocate(4 * kMiB));
  void* two = f.pool.allocate(2 * kMiB);  // fits beside the cached 4 MiB
  CHECK(f.pool.stats().num_alloc_retries == 0);
  void* four = f.pool.allocate(3 * kMiB + 1);  // 4 MiB class: the cached one
  CHECK(f.pool.stats().num_cache_hits == 1);
  f.pool.free(four);
  void* eight_class = nullptr;
  try {
    eight_class = f.pool.allocate(5 * kMiB);  // 8 MiB: more than the host has, even freed
    FAIL("expected OutOfMemoryError");
  } catch (const ruccl::OutOfMemoryError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("pinned host memory: out of memory: tried to allocate 5.00 MiB (5242880 "
                    "bytes, a buffer of 8.00 MiB)") != std::string::npos);
    CHECK(what.find("2.00 MiB in use (2097152 bytes)") != std::string::npos);
    CHECK(what.find("2.00 MiB pinned (2097152 bytes)") != std::string::npos);
  }
  CHECK(eight_class == nullptr);
  const auto s = f.pool.stats();
  CHECK(s.num_alloc_retries == 1);
  CHECK(s.num_ooms == 1);
  CHECK(s.num_device_frees == 1);  // the cached 4 MiB went back before the retry
  f.pool.free(two);
}

TEST_CASE("the pinned pool's statistics and empty_cache track buffers", "[cuda_host]") {
  Fixture f;
  void* a = f.pool.allocate(100);
  void* b = f.pool.allocate(10000);
  auto s = f.pool.stats();
  CHECK(s.allocated_bytes == 4096 + 16384);
  CHECK(s.requested_bytes == 10100);
  CHECK(s.reserved_bytes == 4096 + 16384);
  CHECK(s.active_blocks == 2);
  CHECK(s.segments == 2);
  f.pool.free(b);
  f.pool.reset_peak_stats();
  s = f.pool.stats();
  CHECK(s.peak_allocated_bytes == 4096);
  CHECK(s.peak_reserved_bytes == 4096 + 16384);
  f.pool.empty_cache();
  s = f.pool.stats();
  CHECK(s.reserved_bytes == 4096);  // a is still in use
  CHECK(s.num_device_frees == 1);
  CHECK(f.host->live_segments() == 1);
  f.pool.free(a);
  CHECK(f.pool.allocate(0) == nullptr);
  CHECK_THROWS_AS(f.pool.free(a), ruccl::InternalError);
  CHECK_THROWS_AS(f.pool.record_stream(a, kCopyStream), ruccl::ValueError);
  CHECK_THROWS_AS(f.pool.allocate(std::numeric_limits<std::size_t>::max()),
                  ruccl::OutOfMemoryError);
  CHECK(f.pool.stats().num_ooms == 1);
}

TEST_CASE("a pinned buffer whose copy event cannot be recorded is never handed out again",
          "[cuda_host]") {
  Fixture f;
  void* buffer = f.pool.allocate(4096);
  f.pool.record_stream(buffer, kCopyStream);
  f.host->fail_next_record = true;
  CHECK_THROWS_WITH(f.pool.free(buffer), Catch::Contains("injected"));
  CHECK(f.pool.pending_buffers() == 0);
  void* next = f.pool.allocate(4096);
  CHECK(next != buffer);
  f.pool.free(next);
  f.pool.empty_cache();
  CHECK(f.pool.stats().reserved_bytes == 4096);  // the lost buffer stays pinned
}

TEST_CASE("concurrent pinned allocations and frees never hand out one buffer twice",
          "[cuda_host]") {
  Fixture f;
  std::mutex mutex;
  std::set<void*> live;
  std::vector<std::string> failures;
  auto worker = [&](int id) {
    std::mt19937 random(static_cast<unsigned>(id) + 7);
    std::uniform_int_distribution<std::size_t> size(1, 256 * 1024);
    const StreamId own = kCopyStream + static_cast<StreamId>(id);
    std::vector<void*> mine;
    for (int step = 0; step < 1500; ++step) {
      if (mine.size() < 6 && (random() % 3 != 0 || mine.empty())) {
        void* p = f.pool.allocate(size(random));
        const std::lock_guard<std::mutex> lock(mutex);
        if (!live.insert(p).second) {
          failures.push_back("buffer handed out twice at step " + std::to_string(step));
        }
        mine.push_back(p);
      } else {
        void* p = mine.back();
        mine.pop_back();
        if (random() % 3 == 0) {
          f.pool.record_stream(p, own);
        }
        {
          const std::lock_guard<std::mutex> lock(mutex);
          live.erase(p);
        }
        f.pool.free(p);
        if (random() % 8 == 0) {
          f.host->complete(own);
        }
      }
    }
    for (void* p : mine) {
      {
        const std::lock_guard<std::mutex> lock(mutex);
        live.erase(p);
      }
      f.pool.free(p);
    }
  };
  std::vector<std::thread> threads;
  for (int id = 0; id < 4; ++id) {
    threads.emplace_back(worker, id);
  }
  for (auto& thread : threads) {
    thread.join();
  }
  CHECK(failures.empty());
  CHECK(f.pool.stats().allocated_bytes == 0);
  f.pool.empty_cache();
  CHECK(f.pool.stats().reserved_bytes == 0);
  CHECK(f.host->live_segments() == 0);
  CHECK(f.host->live_events() == 0);
}
