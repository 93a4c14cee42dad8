#pragma once
// The host side of the asynchronous index bounds check (cuda/kernels/index_report.h): one record
// per device in device memory, read at the backend's synchronising points.
#include "cuda/kernels/index_report.h"
#include "tensor/core/device.h"

namespace ruccl::cuda {

/// "index_select", "gather", "scatter_add", "index_add" or "one_hot".
const char* index_op_name(IndexOpCode op);

/// Throws the IndexError a complete record describes, in throw_index_out_of_bounds's words.
[[noreturn]] void throw_recorded(const IndexErrorRecord& record);

/// The device's record (allocated and zeroed on first use, kept for the process, as PyTorch's
/// device-side assertion buffer is); from then on raise_index_error reads it.
IndexErrorRecord* index_error_record(Device device);

/// At a point that has synchronised with work on `device`: throws the IndexError an index op
/// recorded there since the last raise, emptying the record first. No CUDA call on a device no
/// index op has run on; otherwise one small read on the record's own non-blocking stream (it
/// waits for no other work). A report still being written by a kernel on a stream not yet
/// synchronised is left for a later point.
void raise_index_error(Device device);

}  // namespace ruccl::cuda
