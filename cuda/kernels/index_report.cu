// The report kernel of the asynchronous index bounds check (index_report.h).
#include <climits>

#include "cuda/core/check.h"
#include "cuda/kernels/index_report.h"

namespace ruccl::cuda {

namespace {

__global__ void index_report_kernel(const unsigned long long* first_bad, IndexErrorInfo info,
                                    IndexErrorRecord* record) {
  const unsigned long long bad = *first_bad;
  if (bad == ULLONG_MAX) return;
  if (atomicCAS(&record->state, kRecordEmpty, kRecordWriting) != kRecordEmpty) return;
  auto position = static_cast<std::int64_t>(bad);
  std::int64_t offset = 0;  // elements
  for (int d = info.index.ndim - 1; d >= 0; --d) {
    const std::int64_t size = info.index.sizes[d];
    offset += (position % size) * info.index.strides[d];
    position /= size;
  }
  const void* at = static_cast<const char*>(info.index.data) +
                   offset * static_cast<std::int64_t>(info.index.dtype == DType::I32 ? 4 : 8);
  record->value = info.index.dtype == DType::I32
                      ? static_cast<std::int64_t>(*static_cast<const std::int32_t*>(at))
                      : *static_cast<const std::int64_t*>(at);
  record->op = static_cast<int>(info.op);
  record->position = static_cast<std::int64_t>(bad);
  record->bound = info.bound;
  record->dim = info.dim;
  record->index_ndim = info.index.ndim;
  record->of_ndim = info.of_ndim;
  for (int d = 0; d < kMaxDims; ++d) {
    record->index_sizes[d] = info.index.sizes[d];
    record->of_sizes[d] = info.of_sizes[d];
  }
  __threadfence();  // the fields before the state
  atomicExch(&record->state, kRecordComplete);
}

}  // namespace

void launch_index_report(const unsigned long long* first_bad, const IndexErrorInfo& info,
                         IndexErrorRecord* record, cudaStream_t stream) {
  index_report_kernel<<<1, 1, 0, stream>>>(first_bad, info, record);
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ruccl::cuda
