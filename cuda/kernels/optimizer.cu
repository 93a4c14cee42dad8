// Fused optimizer updates: one pass over the parameter, its gradient and its state, with the CPU
// backend's math (tensor/backend/cpu/cpu_optimizer.cpp, torch.optim's single-tensor code)
// operation by operation in the parameter's type, the hyper-parameters rounded to that type on
// the host as the CPU does. Products and sums are rounded one at a time (no fused multiply-add
// contraction), so each step is the same sequence of IEEE operations as the unfused CPU loop.
#include "cuda/core/check.h"
#include "cuda/kernels/launch.h"
#include "cuda/kernels/offset_calculator.h"
#include "cuda/kernels/optimizer_kernels.h"

#include <cmath>

namespace ruccl::cuda {

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float divide(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double divide(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float root(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double root(double a) { return __dsqrt_rn(a); }

template <typename T>
struct SgdArgs {
  T wd, m, one_minus_damp, neg_lr;
  bool has_wd, has_momentum, first, nesterov;
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    sgd_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf, std::int64_t n,
               SgdArgs<T> a) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const T pv = p[i];
    T d = a.has_wd ? add(g[i], mul(a.wd, pv)) : g[i];  // d_p = grad.add(param, alpha=wd)
    if (a.has_momentum) {
      // buf = clone(d_p), or buf.mul_(m).add_(d_p, alpha=1 - dampening)
      const T b = a.first ? d : add(mul(buf[i], a.m), mul(a.one_minus_damp, d));
      buf[i] = b;
      d = a.nesterov ? add(d, mul(a.m, b)) : b;  // d_p.add(buf, alpha=m), or buf
    }
    p[i] = add(pv, mul(a.neg_lr, d));  // param.add_(d_p, alpha=-lr)
  }
}

template <typename T>
struct AdamArgs {
  T neg_step_size, bc2_sqrt, b1, b2, one_minus_b1, one_minus_b2, eps, wd, decay;
  bool coupled_wd, decoupled_wd;
};

template <typename T>
__global__ void __launch_bounds__(kThreads)
    adam_kernel(T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
                std::int64_t n, AdamArgs<T> a) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    T pv = p[i];
    if (a.decoupled_wd) pv = mul(pv, a.decay);                    // AdamW: param.mul_(1 - lr * wd)
    const T gi = a.coupled_wd ? add(g[i], mul(a.wd, pv)) : g[i];  // Adam: grad.add(param, wd)
    const T mv = add(mul(m[i], a.b1), mul(a.one_minus_b1, gi));
    const T vv = add(mul(v[i], a.b2), mul(mul(a.one_minus_b2, gi), gi));  // addcmul
    m[i] = mv;
    v[i] = vv;
    const T denom = add(divide(root(vv), a.bc2_sqrt), a.eps);
    p[i] = add(pv, divide(mul(a.neg_step_size, mv), denom));  // addcdiv
  }
}

unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(grid_blocks(n, kThreads, max_resident_blocks(kThreads)));
}

template <typename T>
void sgd_typed(void* p, const void* g, void* buf, std::int64_t n, const SgdStep& o,
               cudaStream_t stream) {
  SgdArgs<T> a{static_cast<T>(o.weight_decay),
               static_cast<T>(o.momentum),
               static_cast<T>(1.0 - o.dampening),
               static_cast<T>(-o.lr),
               o.weight_decay != 0.0,
               o.momentum != 0.0,
               o.first_step,
               o.nesterov};
  sgd_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
      static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(buf), n, a);
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void adam_typed(void* p, const void* g, void* m, void* v, std::int64_t n, const AdamStep& o,
                cudaStream_t stream) {
  const double bias_correction1 = 1.0 - std::pow(o.beta1, static_cast<double>(o.step));
  const double bias_correction2 = 1.0 - std::pow(o.beta2, static_cast<double>(o.step));
  AdamArgs<T> a{static_cast<T>(-(o.lr / bias_correction1)),
                static_cast<T>(std::sqrt(bias_correction2)),
                static_cast<T>(o.beta1),
                static_cast<T>(o.beta2),
                static_cast<T>(1.0 - o.beta1),
                static_cast<T>(1.0 - o.beta2),
                static_cast<T>(o.eps),
                static_cast<T>(o.weight_decay),
                static_cast<T>(1.0 - o.lr * o.weight_decay),
                !o.decoupled && o.weight_decay != 0.0,
                o.decoupled && o.weight_decay != 0.0};
  adam_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
      static_cast<T*>(p), static_cast<const T*>(g), static_cast<T*>(m), static_cast<T*>(v), n, a);
  RUCCL_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_sgd(bool f64, void* param, const void* grad, void* momentum_buffer, std::int64_t n,
                const SgdStep& step, cudaStream_t stream) {
  if (n == 0) return;
  if (f64) return sgd_typed<double>(param, grad, momentum_buffer, n, step, stream);
  sgd_typed<float>(param, grad, momentum_buffer, n, step, stream);
}

void launch_adam(bool f64, void* param, const void* grad, void* exp_avg, void* exp_avg_sq,
                 std::int64_t n, const AdamStep& step, cudaStream_t stream) {
  if (n == 0) return;
  if (f64) return adam_typed<double>(param, grad, exp_avg, exp_avg_sq, n, step, stream);
  adam_typed<float>(param, grad, exp_avg, exp_avg_sq, n, step, stream);
}

}  // namespace ruccl::cuda
