#pragma once
// Launchers of cuda/kernels/optimizer.cu: one fused SGD or Adam/AdamW step in place over n
// contiguous elements of F32 (f64 false) or F64 (f64 true) on `stream`.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/backend/optimizer_step.h"

namespace ruccl::cuda {

/// momentum_buffer may be null when step.momentum == 0.
void launch_sgd(bool f64, void* param, const void* grad, void* momentum_buffer, std::int64_t n,
                const SgdStep& step, cudaStream_t stream);
void launch_adam(bool f64, void* param, const void* grad, void* exp_avg, void* exp_avg_sq,
                 std::int64_t n, const AdamStep& step, cudaStream_t stream);

}  // namespace ruccl::cuda
