#include "cuda/core/stream.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/core/check.h"
#include "cuda/core/device_guard.h"
#include "tensor/core/error.h"

namespace ruccl::cuda {
namespace {

/// One device's pools, normal and high priority: created on first use, never destroyed (as
/// PyTorch's: streams outlive every static object that might still queue work on them at exit).
struct StreamPool {
  std::once_flag created;
  std::array<std::array<cudaStream_t, kStreamsPerPool>, 2> streams{};  // by StreamPriority
  std::array<std::atomic<std::uint32_t>, 2> next{};
};

/// The pools, one per device of this machine; leaked on purpose (see StreamPool).
StreamPool& pool_of(int device) {
  static StreamPool* const pools = new StreamPool[std::max(cached_device_count(), 1)];
  return pools[device];
}

void create_pool(StreamPool& pool, int device) {
  const DeviceGuard guard(device);
  int least = 0;
  int greatest = 0;
  RUCCL_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::vector<cudaStream_t> created;
  for (std::size_t p = 0; p < pool.streams.size(); ++p) {
    const int priority = p == 0 ? least : greatest;
    for (cudaStream_t& stream : pool.streams[p]) {
      const cudaError_t status =
          cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority);
      if (status != cudaSuccess) {
        for (cudaStream_t made : created) {
          (void)cudaStreamDestroy(made);
        }
        RUCCL_CUDA_CHECK(status);  // throws; call_once lets the next caller try again
      }
      created.push_back(stream);
    }
  }
}

/// The calling thread's current stream per device (nullptr: the default stream).
std::vector<cudaStream_t>& current_streams() {
  thread_local std::vector<cudaStream_t> streams(
      static_cast<std::size_t>(std::max(cached_device_count(), 0)), nullptr);
  return streams;
}

}  // namespace

cudaStream_t current_stream(int device) {
  check_device("current_stream", device);
  return current_streams()[static_cast<std::size_t>(device)];
}

void set_current_stream(int device, cudaStream_t stream) {
  check_device("set_current_stream", device);
  if (stream != nullptr) {
    const int owner = stream_device(stream);
    RUCCL_CHECK(owner == device, DeviceError,
                "set_current_stream: expected a stream of cuda:", device,
                ", got a stream of cuda:", owner);
  }
  current_streams()[static_cast<std::size_t>(device)] = stream;
}

cudaStream_t new_stream(int device, StreamPriority priority) {
  check_device("new_stream", device);
  StreamPool& pool = pool_of(device);
  std::call_once(pool.created, create_pool, std::ref(pool), device);
  const auto p = static_cast<std::size_t>(priority == StreamPriority::High);
  const std::uint32_t index =
      pool.next[p].fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
  return pool.streams[p][index];
}

namespace {

/// Throws DeviceError naming `op` when this machine has no usable CUDA device at all (a stream
/// handle cannot say which device it wanted).
void check_any_device(const char* op) {
  if (cached_device_count() == 0) {
    check_device(op, 0);
  }
}

}  // namespace

int stream_device(cudaStream_t stream) {
  check_any_device("stream_device");
  int device = 0;
  RUCCL_CUDA_CHECK(cudaStreamGetDevice(stream, &device));
  return device;
}

void synchronize_stream(cudaStream_t stream) {
  check_any_device("synchronize_stream");
  RUCCL_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void synchronize_device(int device) {
  check_device("synchronize_device", device);
  const DeviceGuard guard(device);
  RUCCL_CUDA_CHECK(cudaDeviceSynchronize());
}

StreamGuard::StreamGuard(int device, cudaStream_t stream)
    : device_(device), previous_device_(device), stream_(stream) {
  check_device("StreamGuard", device);
  previous_stream_ = current_stream(device);
  previous_device_ = current_device();
  set_current_stream(device, stream);
  if (previous_device_ != device_) {
    const cudaError_t status = cudaSetDevice(device_);
    if (status != cudaSuccess) {
      current_streams()[static_cast<std::size_t>(device_)] = previous_stream_;  // no half guard
      RUCCL_CUDA_CHECK(status);
    }
  }
}

StreamGuard::~StreamGuard() {
  current_streams()[static_cast<std::size_t>(device_)] = previous_stream_;
  if (previous_device_ != device_ && cudaSetDevice(previous_device_) != cudaSuccess) {
    (void)cudaGetLastError();  // a destructor cannot throw; the next checked call reports it
  }
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) {
    // Destroying an event whose work is pending is allowed: the runtime frees it once done.
    (void)cudaEventDestroy(event_);
  }
}

CudaEvent::CudaEvent(CudaEvent&& other) noexcept
    : enable_timing_(other.enable_timing_),
      device_(std::exchange(other.device_, -1)),
      event_(std::exchange(other.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) {
      (void)cudaEventDestroy(event_);
    }
    enable_timing_ = other.enable_timing_;
    device_ = std::exchange(other.device_, -1);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void CudaEvent::record(cudaStream_t stream) {
  check_any_device("CudaEvent::record");
  // The null stream means the current device's default stream: ask the runtime whose it is.
  const int device = stream_device(stream);
  const DeviceGuard guard(device);
  if (event_ == nullptr) {
    const unsigned flags = enable_timing_ ? cudaEventDefault : cudaEventDisableTiming;
    RUCCL_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
    device_ = device;
  }
  RUCCL_CHECK(device == device_, DeviceError,
              "CudaEvent::record: expected a stream of cuda:", device_,
              " (the event's device), got a stream of cuda:", device);
  RUCCL_CUDA_CHECK(cudaEventRecord(event_, stream));
}

void CudaEvent::block(cudaStream_t stream) const {
  if (event_ == nullptr) {
    return;  // no work captured: nothing to wait for
  }
  RUCCL_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}

bool CudaEvent::ready() const {
  if (event_ == nullptr) {
    return true;
  }
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaErrorNotReady) {
    (void)cudaGetLastError();  // not an error: clear it so later checks start clean
    return false;
  }
  RUCCL_CUDA_CHECK(status);
  return true;
}

void CudaEvent::synchronize() const {
  if (event_ != nullptr) {
    RUCCL_CUDA_CHECK(cudaEventSynchronize(event_));
  }
}

bool CudaEvent::synchronize_for(std::chrono::nanoseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(1);
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));  // poll at most every ms
  }
  return true;
}

float CudaEvent::elapsed_ms(const CudaEvent& end) const {
  RUCCL_CHECK(event_ != nullptr && end.event_ != nullptr, ValueError,
              "CudaEvent::elapsed_ms: expected two recorded events, got ",
              event_ == nullptr ? "an unrecorded start" : "an unrecorded end");
  RUCCL_CHECK(enable_timing_ && end.enable_timing_, ValueError,
              "CudaEvent::elapsed_ms: expected two timing events (CudaEvent(true)), got one "
              "created without timing");
  float ms = 0.0F;
  RUCCL_CUDA_CHECK(cudaEventElapsedTime(&ms, event_, end.event_));
  return ms;
}

}  // namespace ruccl::cuda
