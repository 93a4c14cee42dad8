// Host side of the asynchronous index bounds check (index_errors.h).
#include "cuda/backend/index_errors.h"

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <mutex>

#include "cuda/backend/runtime.h"
#include "cuda/core/check.h"
#include "tensor/backend/index_bounds.h"
#include "tensor/core/error.h"

namespace ruccl::cuda {

namespace {

constexpr int kMaxDevices = 64;

struct DeviceRecord {
  std::mutex mutex;
  std::atomic<IndexErrorRecord*> record{nullptr};
  cudaStream_t stream = nullptr;  // the record's reads: non-blocking, so they wait for nothing else
};

DeviceRecord& slot(Device device) {
  static std::array<DeviceRecord, kMaxDevices> slots;
  RUCCL_ASSERT(device.is_cuda() && device.index >= 0 && device.index < kMaxDevices,
               "index error record for ", device);
  return slots[static_cast<std::size_t>(device.index)];
}

Shape shape_of(const std::int64_t* sizes, int ndim) {
  Shape s;
  for (int d = 0; d < ndim; ++d) s.push_back(sizes[d]);
  return s;
}

}  // namespace

const char* index_op_name(IndexOpCode op) {
  switch (op) {
    case IndexOpCode::kIndexSelect:
      return "index_select";
    case IndexOpCode::kGather:
      return "gather";
    case IndexOpCode::kScatterAdd:
      return "scatter_add";
    case IndexOpCode::kIndexAdd:
      return "index_add";
    case IndexOpCode::kOneHot:
      return "one_hot";
  }
  return "index op";
}

void throw_recorded(const IndexErrorRecord& r) {
  RUCCL_ASSERT(r.state == kRecordComplete && r.index_ndim >= 0 && r.index_ndim <= kMaxDims &&
               r.of_ndim >= 0 && r.of_ndim <= kMaxDims);
  throw_index_out_of_bounds(index_op_name(static_cast<IndexOpCode>(r.op)), r.value, r.position,
                            shape_of(r.index_sizes, r.index_ndim), r.bound, r.dim,
                            shape_of(r.of_sizes, r.of_ndim));
}

IndexErrorRecord* index_error_record(Device device) {
  DeviceRecord& s = slot(device);
  if (IndexErrorRecord* r = s.record.load(std::memory_order_acquire)) return r;
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (IndexErrorRecord* r = s.record.load(std::memory_order_acquire)) return r;
  const ScopedDevice scope(device);
  void* p = nullptr;
  RUCCL_CUDA_CHECK(cudaMalloc(&p, sizeof(IndexErrorRecord)));
  cudaStream_t stream = nullptr;
  RUCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  RUCCL_CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(IndexErrorRecord), stream));
  RUCCL_CUDA_CHECK(cudaStreamSynchronize(stream));  // empty before any kernel can see it
  s.stream = stream;
  s.record.store(static_cast<IndexErrorRecord*>(p), std::memory_order_release);
  return static_cast<IndexErrorRecord*>(p);
}

void raise_index_error(Device device) {
  if (!device.is_cuda() || device.index < 0 || device.index >= kMaxDevices) return;
  DeviceRecord& s = slot(device);
  IndexErrorRecord* const r = s.record.load(std::memory_order_acquire);
  if (r == nullptr) return;  // no index op ever ran on the device
  const std::lock_guard<std::mutex> lock(s.mutex);
  const ScopedDevice scope(device);
  unsigned state = kRecordEmpty;
  RUCCL_CUDA_CHECK(
      cudaMemcpyAsync(&state, &r->state, sizeof(state), cudaMemcpyDeviceToHost, s.stream));
  RUCCL_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  if (state != kRecordComplete) return;
  // Read after the state said complete: every field was written before it (the kernel fences).
  IndexErrorRecord host;
  RUCCL_CUDA_CHECK(cudaMemcpyAsync(&host, r, sizeof(host), cudaMemcpyDeviceToHost, s.stream));
  RUCCL_CUDA_CHECK(cudaMemsetAsync(&r->state, 0, sizeof(unsigned), s.stream));
  RUCCL_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  throw_recorded(host);
}

}  // namespace ruccl::cuda
