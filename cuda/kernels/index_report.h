#pragma once
// The asynchronous bounds check of the index ops. Each index kernel records the first bad
// position into a scratch word (first_bad, UINT64_MAX: none); a one-thread report kernel queued
// right after it on the same stream turns a set word into a complete IndexErrorRecord in the
// device's record (device memory, one per device, allocated on first use). No host wait after
// the op: the
// backend reads the record at the next point that synchronises with the device (copy_to_host,
// synchronize, Event::synchronize; so item() and to(cpu)) and raises the IndexError there, as
// PyTorch's device-side asserts surface at the next synchronisation. Only the first error since
// the last raise is kept (later ones find the record taken).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/kernels/tensor_ref.h"

namespace ruccl::cuda {

/// Which op found the bad index (names: index_op_name).
enum class IndexOpCode : int { kIndexSelect, kGather, kScatterAdd, kIndexAdd, kOneHot };

/// record state: kEmpty, then kWriting while the report kernel fills it, then kComplete.
constexpr unsigned kRecordEmpty = 0;
constexpr unsigned kRecordWriting = 1;
constexpr unsigned kRecordComplete = 2;

/// What throw_index_out_of_bounds needs, written by the device; `state` last (after a fence).
struct IndexErrorRecord {
  unsigned state = kRecordEmpty;
  int op = 0;
  std::int64_t value = 0;
  std::int64_t position = 0;  // row-major in the index tensor's shape
  std::int64_t bound = 0;
  std::int64_t dim = 0;  // < 0: none (one_hot)
  int index_ndim = 0;
  int of_ndim = 0;
  std::int64_t index_sizes[kMaxDims] = {};
  std::int64_t of_sizes[kMaxDims] = {};
};

/// The op's side of a report: the index tensor as the user passed it (its own sizes and strides;
/// the position the kernel records is row-major in these sizes) and the words of the error.
struct IndexErrorInfo {
  IndexOpCode op = IndexOpCode::kGather;
  TensorRef index;
  std::int64_t bound = 0;
  std::int64_t dim = 0;
  int of_ndim = 0;
  std::int64_t of_sizes[kMaxDims] = {};
};

/// Queues on `stream`: if *first_bad is set and `record` (the device's record) is empty, fills it
/// with info, the position and the index's value there.
void launch_index_report(const unsigned long long* first_bad, const IndexErrorInfo& info,
                         IndexErrorRecord* record, cudaStream_t stream);

}  // namespace ruccl::cuda
