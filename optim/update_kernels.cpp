#include "optim/update_kernels.h"

// g++ 12 warns "'__Y' may be used uninitialized" inside its own avx512fintrin.h when Eigen's
// AVX-512 sqrt is inlined here: a false positive of the intrinsics header (GCC bug 105593).
#if !defined(__clang__)  // clang has no -Wmaybe-uninitialized (and no such false positive)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace ruccl::optim {
namespace {

void check_operand(const char* op, const Tensor& t, const Tensor& param, const char* what) {
  RUCCL_ASSERT(t.defined() && t.device().is_cpu() && t.is_contiguous(), op, ": ", what,
               " must be a contiguous CPU tensor");
  RUCCL_ASSERT(t.dtype() == param.dtype() && t.numel() == param.numel(), op, ": ", what,
               " must match the parameter's dtype and size");
}

template <typename T>
void sgd_loop(T* p, const T* g, T* buf, bool first, std::int64_t n, double lr_d,
              const SgdOptions& o) {
  // Scalars are rounded to T first, as torch does for `alpha=` and `value=` arguments.
  const T wd = static_cast<T>(o.weight_decay);
  const T m = static_cast<T>(o.momentum);
  const T one_minus_damp = static_cast<T>(1.0 - o.dampening);
  const T neg_lr = static_cast<T>(-lr_d);
  const bool has_wd = o.weight_decay != 0.0;
  // Eigen array expressions over L1-sized chunks (explicit SIMD; see adam_loop).
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr std::int64_t kChunk = 1024;
  Eigen::Array<T, kChunk, 1> d_buffer;
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const Eigen::Index len = static_cast<Eigen::Index>(std::min(kChunk, n - start));
    Eigen::Map<Array> P(p + start, len);
    Eigen::Map<const Array> G(g + start, len);
    auto D = d_buffer.head(len);
    if (has_wd) {
      D = G + wd * P;  // d_p = grad.add(param, alpha=wd)
    } else {
      D = G;
    }
    if (o.momentum != 0.0) {
      Eigen::Map<Array> B(buf + start, len);
      if (first) {
        B = D;  // buf = clone(d_p)
      } else {
        B = B * m + one_minus_damp * D;  // buf.mul_(m).add_(d_p, alpha=1 - dampening)
      }
      if (o.nesterov) {
        D = D + m * B;  // d_p = d_p.add(buf, alpha=m)
      } else {
        D = B;
      }
    }
    P = P + neg_lr * D;  // param.add_(d_p, alpha=-lr)
  }
}

template <typename T>
void adam_loop(T* p, const T* g, T* m, T* v, std::int64_t n, std::int64_t step, double lr,
               const AdamOptions& o, bool decoupled) {
  const double bias_correction1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  const T neg_step_size = static_cast<T>(-(lr / bias_correction1));
  const T bc2_sqrt = static_cast<T>(std::sqrt(bias_correction2));
  const T b1 = static_cast<T>(o.beta1);
  const T b2 = static_cast<T>(o.beta2);
  const T one_minus_b1 = static_cast<T>(1.0 - o.beta1);
  const T one_minus_b2 = static_cast<T>(1.0 - o.beta2);
  const T eps = static_cast<T>(o.eps);
  const T wd = static_cast<T>(o.weight_decay);
  const T decay = static_cast<T>(1.0 - lr * o.weight_decay);
  const bool coupled_wd = !decoupled && o.weight_decay != 0.0;
  const bool decoupled_wd = decoupled && o.weight_decay != 0.0;
  // Eigen array expressions over L1-sized chunks: one pass over memory, and vectorised sqrt and
  // division (a plain loop calling std::sqrt stays scalar under -fmath-errno).
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr std::int64_t kChunk = 1024;
  Eigen::Array<T, kChunk, 1> grad_buffer;
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const Eigen::Index len = static_cast<Eigen::Index>(std::min(kChunk, n - start));
    Eigen::Map<Array> P(p + start, len), M(m + start, len), V(v + start, len);
    Eigen::Map<const Array> G(g + start, len);
    if (decoupled_wd) P *= decay;  // AdamW: param.mul_(1 - lr * wd)
    const auto moments = [&](const auto& Gi) {
      M = M * b1 + one_minus_b1 * Gi;
      V = V * b2 + (one_minus_b2 * Gi) * Gi;  // addcmul: v + (value * g) * g
    };
    if (coupled_wd) {
      auto Gi = grad_buffer.head(len);
      Gi = G + wd * P;  // Adam: grad.add(param, alpha=wd)
      moments(Gi);
    } else {
      moments(G);
    }
    P = P + (neg_step_size * M) / (V.sqrt() / bc2_sqrt + eps);  // addcdiv: p + (value * m) / d
  }
}

}  // namespace

void sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                bool first_step, double lr, const SgdOptions& options) {
  RUCCL_ASSERT(param.defined() && param.device().is_cpu() && param.is_contiguous());
  check_operand("sgd_update", grad, param, "grad");
  const bool momentum = options.momentum != 0.0;
  if (momentum) check_operand("sgd_update", momentum_buffer, param, "momentum buffer");
  if (param.dtype() == DType::F64) {
    sgd_loop(param.data<double>(), grad.data<double>(),
             momentum ? momentum_buffer.data<double>() : nullptr, first_step, param.numel(), lr,
             options);
  } else {
    sgd_loop(param.data<float>(), grad.data<float>(),
             momentum ? momentum_buffer.data<float>() : nullptr, first_step, param.numel(), lr,
             options);
  }
}

void adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                 const Tensor& exp_avg_sq, std::int64_t step, double lr, const AdamOptions& options,
                 bool decoupled) {
  RUCCL_ASSERT(param.defined() && param.device().is_cpu() && param.is_contiguous());
  RUCCL_ASSERT(step >= 1, "adam_update: step counts from 1");
  check_operand("adam_update", grad, param, "grad");
  check_operand("adam_update", exp_avg, param, "exp_avg");
  check_operand("adam_update", exp_avg_sq, param, "exp_avg_sq");
  if (param.dtype() == DType::F64) {
    adam_loop(param.data<double>(), grad.data<double>(), exp_avg.data<double>(),
              exp_avg_sq.data<double>(), param.numel(), step, lr, options, decoupled);
  } else {
    adam_loop(param.data<float>(), grad.data<float>(), exp_avg.data<float>(),
              exp_avg_sq.data<float>(), param.numel(), step, lr, options, decoupled);
  }
}

}  // namespace ruccl::optim
