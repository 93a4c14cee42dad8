// GPU tests of streams, events and the caching allocators on a real device (binary
// ruccl_cuda_tests, label gpu). A stream is held back with a host function that waits at a gate
// the test opens: what must wait for it can be seen waiting, without timing guesses. Every test
// fails loudly without a GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda/core/check.h"
#include "cuda/core/device.h"
#include "cuda/core/device_guard.h"
#include "cuda/core/stream.h"
#include "cuda/memory/caching_allocator.h"
#include "cuda/memory/pinned_pool.h"
#include "tensor/core/error.h"

namespace {

using namespace std::chrono_literals;

void require_gpu() {
  if (!ruccl::cuda::cuda_available()) {
    FAIL("GPU tests need a CUDA device: " << ruccl::cuda::device_status());
  }
}

/// Holds back the work queued on a stream after it until open() (or 20 s, so a failing test
/// cannot block the stream for ever). The destructor opens it and waits for the host function.
class StreamGate {
 public:
  explicit StreamGate(cudaStream_t stream) : stream_(stream) {
    RUCCL_CUDA_CHECK(cudaLaunchHostFunc(stream_, &StreamGate::wait, this));
  }
  ~StreamGate() {
    open();
    (void)cudaStreamSynchronize(stream_);
  }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void open() { open_.store(true, std::memory_order_release); }

 private:
  static void CUDART_CB wait(void* self) {
    auto* gate = static_cast<StreamGate*>(self);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!gate->open_.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100us);
    }
  }

  cudaStream_t stream_;
  std::atomic<bool> open_{false};
};

/// Whether all work on `stream` is done, without blocking.
bool stream_idle(cudaStream_t stream) {
  const cudaError_t status = cudaStreamQuery(stream);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  RUCCL_CUDA_CHECK(status);
  return true;
}

}  // namespace

TEST_CASE("a device storage round-trips bytes and its block is reused after it is freed",
          "[cuda]") {
  require_gpu();
  ruccl::cuda::empty_cache();  // nothing is held: the block comes from a segment of its own
  constexpr std::size_t kBytes = 3 << 20;  // large pool
  const auto before = ruccl::cuda::memory_stats(0);
  auto storage = ruccl::cuda::allocate_storage(kBytes, ruccl::Device::cuda(0));
  REQUIRE(storage->data() != nullptr);
  CHECK(storage->nbytes() == kBytes);
  CHECK(storage->device() == ruccl::Device::cuda(0));
  const cudaStream_t stream = ruccl::cuda::current_stream(0);
  RUCCL_CUDA_CHECK(cudaMemsetAsync(storage->data(), 0x5a, kBytes, stream));
  std::vector<unsigned char> host(kBytes, 0);
  RUCCL_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), storage->data(), kBytes, cudaMemcpyDeviceToHost, stream));
  RUCCL_CUDA_CHECK(cudaStreamSynchronize(stream));
  CHECK(std::all_of(host.begin(), host.end(), [](unsigned char b) { return b == 0x5a; }));
  const auto held = ruccl::cuda::memory_stats(0);
  CHECK(held.allocated_bytes == before.allocated_bytes + kBytes);
  void* const first = storage->data();
  storage.reset();
  auto again = ruccl::cuda::allocate_storage(kBytes, ruccl::Device::cuda(0));
  CHECK(again->data() == first);
  const auto after = ruccl::cuda::memory_stats(0);
  CHECK(after.num_cache_hits == held.num_cache_hits + 1);
  CHECK(after.num_device_allocs == held.num_device_allocs);
  again.reset();
  CHECK(ruccl::cuda::memory_stats(0).allocated_bytes == before.allocated_bytes);
  ruccl::cuda::empty_cache();
  const auto emptied = ruccl::cuda::memory_stats(0);
  CHECK(emptied.num_device_frees > after.num_device_frees);
  CHECK(emptied.reserved_bytes < after.reserved_bytes);
}

TEST_CASE("a block recorded on a busy side stream is not reused until that stream is done",
          "[cuda]") {
  require_gpu();
  ruccl::cuda::empty_cache();  // nothing is held: no cached block of earlier tests competes
  const cudaStream_t compute = ruccl::cuda::new_stream(0);
  const cudaStream_t side = ruccl::cuda::new_stream(0);
  REQUIRE(compute != side);
  const ruccl::cuda::StreamGuard on_compute(0, compute);
  constexpr std::size_t kBytes = 20 << 20;  // exactly one large segment: never split
  auto storage = ruccl::cuda::allocate_storage(kBytes, ruccl::Device::cuda(0));
  void* const block = storage->data();
  // A second cached segment, so that the allocation made while the side stream is held back is
  // served from the cache: cudaMalloc is not asked while a stream is blocked.
  void* const spare = ruccl::cuda::allocate_storage(kBytes, ruccl::Device::cuda(0))->data();
  std::shared_ptr<ruccl::Storage> meanwhile;
  {
    StreamGate gate(side);
    RUCCL_CUDA_CHECK(cudaMemsetAsync(block, 1, kBytes, side));  // queued behind the gate
    ruccl::cuda::record_stream(*storage, side);
    storage.reset();
    meanwhile = ruccl::cuda::allocate_storage(kBytes, ruccl::Device::cuda(0));
    CHECK(meanwhile->data() != block);  // the side stream may still write it
    CHECK(meanwhile->data() == spare);
    CHECK_FALSE(stream_idle(side));
    gate.open();
    RUCCL_CUDA_CHECK(cudaStreamSynchronize(side));
  }
  auto after = ruccl::cuda::allocate_storage(kBytes, ruccl::Device::cuda(0));
  CHECK(after->data() == block);  // its event completed: back in the compute stream's pool
}

TEST_CASE("an event recorded on one stream orders another stream's later work after it", "[cuda]") {
  require_gpu();
  const cudaStream_t producer = ruccl::cuda::new_stream(0);
  const cudaStream_t consumer = ruccl::cuda::new_stream(0);
  constexpr std::size_t kBytes = 1 << 20;
  auto device = ruccl::cuda::allocate_storage(kBytes, ruccl::Device::cuda(0));
  RUCCL_CUDA_CHECK(cudaMemset(device->data(), 0, kBytes));
  // cudaMemset returns before it runs, and the pool's streams do not wait for the null stream.
  RUCCL_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  ruccl::cuda::PinnedBuffer host = ruccl::cuda::allocate_pinned(kBytes);
  std::memset(host.data(), 0xff, kBytes);
  ruccl::cuda::CudaEvent written;
  {
    StreamGate gate(producer);
    RUCCL_CUDA_CHECK(cudaMemsetAsync(device->data(), 7, kBytes, producer));
    written.record(producer);
    written.block(consumer);
    RUCCL_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), device->data(), kBytes, cudaMemcpyDeviceToHost, consumer));
    ruccl::cuda::record_stream(*device, producer);
    ruccl::cuda::record_stream(*device, consumer);
    host.record_stream(consumer);
    CHECK(written.recorded());
    CHECK(written.device() == 0);
    std::this_thread::sleep_for(20ms);  // time for the copy to run early, were it not held back
    CHECK_FALSE(written.ready());
    CHECK_FALSE(stream_idle(consumer));
    gate.open();
    CHECK(written.synchronize_for(10s));
    RUCCL_CUDA_CHECK(cudaStreamSynchronize(consumer));
  }
  const auto* bytes = static_cast<const unsigned char*>(host.data());
  CHECK(std::all_of(bytes, bytes + kBytes, [](unsigned char b) { return b == 7; }));
}

TEST_CASE("new_stream cycles through pools of distinct non-blocking streams per priority",
          "[cuda]") {
  require_gpu();
  std::vector<cudaStream_t> streams;
  for (int i = 0; i <= ruccl::cuda::kStreamsPerPool; ++i) {
    streams.push_back(ruccl::cuda::new_stream(0));
  }
  const std::set<cudaStream_t> distinct(streams.begin(), streams.end() - 1);
  CHECK(distinct.size() == static_cast<std::size_t>(ruccl::cuda::kStreamsPerPool));
  CHECK(streams.back() == streams.front());
  unsigned flags = 0;
  RUCCL_CUDA_CHECK(cudaStreamGetFlags(streams.front(), &flags));
  CHECK((flags & cudaStreamNonBlocking) != 0);
  CHECK(ruccl::cuda::stream_device(streams.front()) == 0);
  // The high-priority pool: other streams, at the device's greatest priority.
  int least = 0;
  int greatest = 0;
  RUCCL_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  const cudaStream_t high = ruccl::cuda::new_stream(0, ruccl::cuda::StreamPriority::High);
  CHECK(distinct.count(high) == 0);
  int priority = 0;
  RUCCL_CUDA_CHECK(cudaStreamGetPriority(high, &priority));
  CHECK(priority == greatest);
  RUCCL_CUDA_CHECK(cudaStreamGetPriority(streams.front(), &priority));
  CHECK(priority == least);
}

TEST_CASE("the current stream is per thread and a StreamGuard restores the previous one",
          "[cuda]") {
  require_gpu();
  const cudaStream_t side = ruccl::cuda::new_stream(0);
  CHECK(ruccl::cuda::current_stream(0) == ruccl::cuda::default_stream());
  {
    const ruccl::cuda::StreamGuard guard(0, side);
    CHECK(ruccl::cuda::current_stream(0) == side);
    cudaStream_t seen_elsewhere = side;
    std::thread other([&] { seen_elsewhere = ruccl::cuda::current_stream(0); });
    other.join();
    CHECK(seen_elsewhere == ruccl::cuda::default_stream());
    const ruccl::cuda::DeviceGuard device_guard(0);
    CHECK(ruccl::cuda::current_device() == 0);
  }
  CHECK(ruccl::cuda::current_stream(0) == ruccl::cuda::default_stream());
}

TEST_CASE("a pinned buffer used by a held-back copy is reused only after the copy", "[cuda]") {
  require_gpu();
  ruccl::cuda::empty_pinned_cache();  // nothing is held: no cached buffer of earlier tests competes
  const cudaStream_t copies = ruccl::cuda::new_stream(0);
  constexpr std::size_t kBytes = 64 << 10;
  auto device = ruccl::cuda::allocate_storage(kBytes, ruccl::Device::cuda(0));
  ruccl::cuda::PinnedBuffer staging = ruccl::cuda::allocate_pinned(kBytes);
  void* const first = staging.data();
  // A second cached buffer for the allocation made while the copy stream is held back: no
  // cudaHostAlloc is asked while a stream is blocked.
  void* const spare = ruccl::cuda::allocate_pinned(kBytes).data();
  ruccl::cuda::PinnedBuffer meanwhile;
  {
    StreamGate gate(copies);
    RUCCL_CUDA_CHECK(
        cudaMemcpyAsync(device->data(), first, kBytes, cudaMemcpyHostToDevice, copies));
    staging.record_stream(copies);
    ruccl::cuda::record_stream(*device, copies);
    staging.reset();
    CHECK_FALSE(staging);
    meanwhile = ruccl::cuda::allocate_pinned(kBytes);
    CHECK(meanwhile.data() != first);  // the copy may still read it
    CHECK(meanwhile.data() == spare);
    gate.open();
    RUCCL_CUDA_CHECK(cudaStreamSynchronize(copies));
  }
  const auto before = ruccl::cuda::pinned_memory_stats();
  ruccl::cuda::PinnedBuffer after = ruccl::cuda::allocate_pinned(kBytes);
  CHECK(after.data() == first);
  CHECK(ruccl::cuda::pinned_memory_stats().num_cache_hits == before.num_cache_hits + 1);
}

TEST_CASE("an allocation larger than the device throws OutOfMemoryError naming the device",
          "[cuda]") {
  require_gpu();
  const auto before = ruccl::cuda::memory_stats(0);
  constexpr std::size_t kTooMuch = std::size_t{1} << 50;  // 1 PiB
  try {
    (void)ruccl::cuda::allocate_storage(kTooMuch, ruccl::Device::cuda(0));
    FAIL("a 1 PiB allocation did not throw");
  } catch (const ruccl::OutOfMemoryError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("CUDA out of memory on cuda:0") != std::string::npos);
    CHECK(what.find("(1125899906842624 bytes") != std::string::npos);
    CHECK(what.find("the device has ") != std::string::npos);
  }
  const auto after = ruccl::cuda::memory_stats(0);
  CHECK(after.num_ooms == before.num_ooms + 1);
  CHECK(after.num_alloc_retries == before.num_alloc_retries + 1);
  CHECK(cudaGetLastError() == cudaSuccess);  // the failed cudaMalloc left no error behind
  // The device still allocates.
  CHECK(ruccl::cuda::allocate_storage(1024, ruccl::Device::cuda(0))->data() != nullptr);
}

TEST_CASE("timing events measure the time between two records", "[cuda]") {
  require_gpu();
  const cudaStream_t stream = ruccl::cuda::new_stream(0);
  ruccl::cuda::CudaEvent start(true);
  ruccl::cuda::CudaEvent end(true);
  start.record(stream);
  {
    StreamGate gate(stream);
    end.record(stream);
    std::this_thread::sleep_for(30ms);
    gate.open();
  }
  end.synchronize();
  CHECK(end.ready());
  CHECK(start.elapsed_ms(end) >= 20.0F);  // the gate held the stream ~30 ms
}
