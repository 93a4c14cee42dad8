// The CUDA layer's entry points where the device asked for is missing: on this GPU-less machine
// every device is missing (the messages say there is none); on a GPU machine an index past the
// last device is. Either way they throw DeviceError naming the device: never a crash, never a
// CUDA call on a device that is not there.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/core/device.h"
#include "cuda/core/device_guard.h"
#include "cuda/core/stream.h"
#include "cuda/memory/caching_allocator.h"
#include "cuda/memory/pinned_pool.h"
#include "tensor/core/error.h"

namespace {

/// A device index this machine does not have: 0 without a GPU, one past the last otherwise.
int missing_device() { return ruccl::cuda::device_count(); }

/// Runs `call`, expecting DeviceError whose message names `op`, the missing device and why.
template <typename Call>
void expect_missing_device(const std::string& op, Call&& call) {
  const int device = missing_device();
  try {
    call(device);
    FAIL(op << " on missing device " << device << " did not throw");
  } catch (const ruccl::DeviceError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find(op) != std::string::npos);
    if (device == 0) {
      CHECK(what.find("cuda:0") != std::string::npos);
      CHECK(what.find("expected a CUDA device, got none") != std::string::npos);
    } else {
      CHECK(what.find("expected a CUDA device index in [0, " + std::to_string(device) + "), got " +
                      std::to_string(device)) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("current_stream and set_current_stream on a missing device throw DeviceError naming it",
          "[cuda_host]") {
  expect_missing_device("current_stream",
                        [](int device) { (void)ruccl::cuda::current_stream(device); });
  expect_missing_device("set_current_stream", [](int device) {
    ruccl::cuda::set_current_stream(device, ruccl::cuda::default_stream());
  });
}

TEST_CASE("new_stream on a missing device throws DeviceError naming it", "[cuda_host]") {
  expect_missing_device("new_stream", [](int device) { (void)ruccl::cuda::new_stream(device); });
  // Asking again gives the same answer (no half-created pool left behind).
  expect_missing_device("new_stream", [](int device) { (void)ruccl::cuda::new_stream(device); });
}

TEST_CASE("device and stream guards for a missing device throw DeviceError naming it",
          "[cuda_host]") {
  expect_missing_device("DeviceGuard",
                        [](int device) { const ruccl::cuda::DeviceGuard guard(device); });
  expect_missing_device("StreamGuard", [](int device) {
    const ruccl::cuda::StreamGuard guard(device, ruccl::cuda::default_stream());
  });
}

TEST_CASE("allocate_storage on a missing device throws DeviceError naming it", "[cuda_host]") {
  expect_missing_device("allocate_storage", [](int device) {
    (void)ruccl::cuda::allocate_storage(1024, ruccl::Device::cuda(device));
  });
  expect_missing_device("memory_stats",
                        [](int device) { (void)ruccl::cuda::memory_stats(device); });
  expect_missing_device("reset_peak_stats",
                        [](int device) { ruccl::cuda::reset_peak_stats(device); });
  // Emptying the cache of devices that never allocated is a no-op, GPU or not.
  CHECK_NOTHROW(ruccl::cuda::empty_cache());
}

TEST_CASE("allocate_storage for a CPU device is refused with the device named", "[cuda_host]") {
  try {
    (void)ruccl::cuda::allocate_storage(64, ruccl::Device::cpu());
    FAIL("allocate_storage on the CPU did not throw");
  } catch (const ruccl::DeviceError& e) {
    CHECK(std::string(e.what()) == "allocate_storage: expected a CUDA device, got cpu");
  }
  const ruccl::Storage host(nullptr, 0, ruccl::Device::cpu(), nullptr);
  CHECK_THROWS_AS(ruccl::cuda::record_stream(host, nullptr), ruccl::DeviceError);
}

TEST_CASE("pinned buffers without a GPU are refused with DeviceError and the pool reports zeros",
          "[cuda_host]") {
  if (ruccl::cuda::cuda_available()) {
    // With a GPU the pool works; its own behaviour is in the GPU suite. Here: an empty buffer.
    const ruccl::cuda::PinnedBuffer empty;
    CHECK_FALSE(static_cast<bool>(empty));
    CHECK(empty.data() == nullptr);
    return;
  }
  try {
    (void)ruccl::cuda::allocate_pinned(4096);
    FAIL("allocate_pinned without a GPU did not throw");
  } catch (const ruccl::DeviceError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("allocate_pinned") != std::string::npos);
    CHECK(what.find("expected a CUDA device, got none") != std::string::npos);
  }
  CHECK(ruccl::cuda::pinned_memory_stats().num_allocations == 0);
  CHECK_NOTHROW(ruccl::cuda::empty_pinned_cache());
}

TEST_CASE("an event never recorded is ready and waits return at once without touching a device",
          "[cuda_host]") {
  ruccl::cuda::CudaEvent event;
  CHECK_FALSE(event.recorded());
  CHECK(event.device() == -1);
  CHECK(event.ready());
  CHECK_NOTHROW(event.synchronize());
  CHECK(event.synchronize_for(std::chrono::milliseconds(0)));
  CHECK_NOTHROW(event.block(nullptr));
  ruccl::cuda::CudaEvent moved(std::move(event));
  CHECK(moved.ready());
  CHECK_THROWS_AS(moved.elapsed_ms(ruccl::cuda::CudaEvent(true)), ruccl::ValueError);
}

TEST_CASE("recording an event or asking a stream's device without a GPU throws DeviceError",
          "[cuda_host]") {
  if (ruccl::cuda::cuda_available()) {
    // With a GPU they work: the null stream is the current device's.
    CHECK(ruccl::cuda::stream_device(nullptr) == ruccl::cuda::current_device());
    return;
  }
  for (const auto& [op, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"CudaEvent::record", [] { ruccl::cuda::CudaEvent().record(nullptr); }},
           {"stream_device", [] { (void)ruccl::cuda::stream_device(nullptr); }},
           {"synchronize_stream", [] { ruccl::cuda::synchronize_stream(nullptr); }},
           {"synchronize_device", [] { ruccl::cuda::synchronize_device(0); }}}) {
    try {
      call();
      FAIL(op << " without a GPU did not throw");
    } catch (const ruccl::DeviceError& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find(op + "(cuda:0): expected a CUDA device, got none") != std::string::npos);
    }
  }
}
