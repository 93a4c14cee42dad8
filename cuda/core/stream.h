#pragma once
// Streams and events of the CUDA layer, in the spirit of PyTorch's c10::cuda streams:
// - every thread has a current stream per device; it starts as the device's default (null)
//   stream, and every backend call of that device is queued on it;
// - new_stream() hands out streams of a per-device pool (created lazily, non-blocking, living for
//   the process, handed out round-robin), so asking for a stream is cheap and never leaks;
// - StreamGuard sets the current stream for a scope; CudaEvent orders work across streams.
//
//   cudaStream_t side = ruccl::cuda::new_stream(0);
//   ruccl::cuda::CudaEvent ready;
//   ready.record(ruccl::cuda::current_stream(0));  // what compute queued so far...
//   ready.block(side);                             // ...comes before what `side` queues next
//   {
//     ruccl::cuda::StreamGuard guard(0, side);     // ops of device 0 now queue on `side`
//     ...
//   }
#include <cuda_runtime_api.h>

#include <chrono>

namespace ruccl::cuda {

/// How many streams each device's pool holds (as PyTorch's pool: 32). new_stream() cycles them.
inline constexpr int kStreamsPerPool = 32;

/// The device's default stream: the null stream (0), which the Backend seam's Stream calls handle
/// 0.
inline cudaStream_t default_stream() { return nullptr; }

/// The calling thread's current stream on `device` (the default stream until set). Throws
/// DeviceError naming the device when this machine has no such CUDA device.
cudaStream_t current_stream(int device);

/// Makes `stream` the calling thread's current stream on `device` (nullptr: the default stream).
/// The stream must belong to `device`: checked with cudaStreamGetDevice, DeviceError otherwise.
void set_current_stream(int device, cudaStream_t stream);

/// The priority of a pooled stream. High: the device's greatest priority
/// (cudaDeviceGetStreamPriorityRange), for communication that compute should not delay.
enum class StreamPriority { Normal, High };

/// A stream of `device`'s pool of that priority: kStreamsPerPool non-blocking streams
/// (cudaStreamNonBlocking: they do not synchronise with the null stream) per priority, created on
/// the first call for that device and never destroyed; successive calls return them round-robin,
/// so calls less than kStreamsPerPool apart return different streams. Thread-safe. Throws
/// DeviceError for a missing device, CudaError when the runtime cannot create them.
cudaStream_t new_stream(int device, StreamPriority priority = StreamPriority::Normal);

/// The device `stream` belongs to (cudaStreamGetDevice; for the null stream, the current device).
int stream_device(cudaStream_t stream);

/// Blocks until all work queued on `stream` so far is done (cudaStreamSynchronize).
void synchronize_stream(cudaStream_t stream);

/// Blocks until all work queued on every stream of `device` is done (cudaDeviceSynchronize).
void synchronize_device(int device);

/// Makes `stream` the current stream of `device` for the guard's lifetime, and `device` the
/// current device; restores both on destruction. Not copyable, not movable.
class StreamGuard {
 public:
  StreamGuard(int device, cudaStream_t stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

  /// The stream that is current while the guard lives.
  cudaStream_t stream() const { return stream_; }

 private:
  int device_;
  int previous_device_;
  cudaStream_t stream_;
  cudaStream_t previous_stream_;
};

/// An owned cudaEvent_t (PyTorch's CUDAEvent): created lazily on the device of the first stream it
/// is recorded on, destroyed with the object. Timing is off unless asked for (timing events cost
/// more to record and to wait on). Before the first record() it stands for no work: ready() is
/// true and waits return at once, as a fresh CUDA event. Movable, not copyable.
class CudaEvent {
 public:
  explicit CudaEvent(bool enable_timing = false) : enable_timing_(enable_timing) {}
  ~CudaEvent();
  CudaEvent(CudaEvent&& other) noexcept;
  CudaEvent& operator=(CudaEvent&& other) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;

  /// Captures the work queued on `stream` so far (cudaEventRecord). Later records replace it. An
  /// event lives on one device: recording it on a stream of another device throws DeviceError.
  void record(cudaStream_t stream);
  /// Makes work queued on `stream` after this call wait for the captured work
  /// (cudaStreamWaitEvent: the host does not block). `stream` may be of another device.
  void block(cudaStream_t stream) const;
  /// Whether the captured work is done (cudaEventQuery), without blocking.
  bool ready() const;
  /// Blocks the calling thread until the captured work is done (cudaEventSynchronize).
  void synchronize() const;
  /// Waits up to `timeout` for the captured work, polling; true when it is done, false when the
  /// time ran out (nothing is cancelled: the work stays queued).
  bool synchronize_for(std::chrono::nanoseconds timeout) const;
  /// Milliseconds between this event and `end` (both recorded, both timing events, end done);
  /// cudaEventElapsedTime.
  float elapsed_ms(const CudaEvent& end) const;

  /// Whether record() was called.
  bool recorded() const { return event_ != nullptr; }
  /// The device of the event (-1 before the first record).
  int device() const { return device_; }
  /// The raw event (nullptr before the first record).
  cudaEvent_t handle() const { return event_; }

 private:
  bool enable_timing_;
  int device_ = -1;
  cudaEvent_t event_ = nullptr;
};

}  // namespace ruccl::cuda
