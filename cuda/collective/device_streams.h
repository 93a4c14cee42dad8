#pragma once
// Small helpers every device collective shares: the stream a rank's collectives run on and the
// mapping of tensor dtypes and reduce operations onto the fold kernels.
#include <cuda_runtime.h>

#include <functional>

#include "collective/common/reduce_operation.h"
#include "cuda/collective/fold_kernels.cuh"
#include "tensor/core/device.h"
#include "tensor/core/dtype.h"

namespace ruccl::cuda {

/// The stream rank collectives on `device` are ordered on: the device's current stream (what the
/// tensor backend orders this thread's work on), so a collective sees the kernels that produced
/// its input and its result is ready for the next kernel, with no host synchronisation.
cudaStream_t collective_stream(Device device);

/// The calling thread's collective stream on `device`, carried to another thread: the returned
/// function makes it that thread's current stream (CollectiveEngine::caller_context).
std::function<void()> carry_collective_stream(Device device);

/// The fold element type of an accumulation dtype (F32, F64, I32, I64; DTypeError otherwise).
fold::Elem fold_elem(DType dtype);
/// The fold operation of `op` (Mean folds as Sum; the divisor comes apart).
fold::Op fold_op(ReduceOperation op);

}  // namespace ruccl::cuda
