// CpuBackend: the optimizer updates (Backend::sgd_update, Backend::adam_update), mirroring
// torch.optim's single-tensor code (torch 1.13) operation by operation, in the parameter's float
// type, so trajectories match PyTorch to rounding (torch's vectorised CPU kernels use FMA; these
// loops do not: CMakeLists.txt compiles this file with -ffp-contract=off; hence the tolerance
// documented in tests/optim/optimizer_golden_test.cpp).

// g++ 12 warns "'__Y' may be used uninitialized" inside its own avx512fintrin.h when Eigen's
// AVX-512 sqrt is inlined here: a false positive of the intrinsics header (GCC bug 105593).
#if !defined(__clang__)  // clang has no -Wmaybe-uninitialized (and no such false positive)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/tensor.h"

namespace ruccl::cpu {
namespace {

template <typename T>
void sgd_loop(T* p, const T* g, T* buf, std::int64_t n, const SgdStep& o) {
  const bool first = o.first_step;
  const double lr_d = o.lr;
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
void adam_loop(T* p, const T* g, T* m, T* v, std::int64_t n, const AdamStep& o) {
  const std::int64_t step = o.step;
  const double lr = o.lr;
  const bool decoupled = o.decoupled;
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
  // Eigen array expressions: one pass over memory, and vectorised sqrt and division (a plain loop
  // calling std::sqrt stays scalar under -fmath-errno). Every element goes through the same
  // packet code, a packet at a time (fixed-size arrays: no
  // alignment peeling, no scalar tail; the last partial packet is padded with zeros whose results
  // are dropped). Eigen's dynamic loops would update the elements before the first aligned
  // address and after the last whole packet with scalar code, whose std::sqrt rounds differently
  // from the fast packet sqrt (an rsqrt estimate and a Newton step): an element's update would
  // depend on where the tensor starts. Here it does not, so a ZeRO rank stepping a slice
  // (Optimizer::step_range) gets the bits of the whole tensor's step.
  constexpr std::int64_t kPacket = Eigen::internal::packet_traits<T>::size;
  using Packet = Eigen::Array<T, kPacket, 1>;
  using Map = Eigen::Map<Packet>;
  using ConstMap = Eigen::Map<const Packet>;
  const auto update = [&](Packet& P, const Packet& G, Packet& M, Packet& V) {
    if (decoupled_wd) P *= decay;  // AdamW: param.mul_(1 - lr * wd)
    const auto moments = [&](const Packet& Gm) {
      M = M * b1 + one_minus_b1 * Gm;
      V = V * b2 + (one_minus_b2 * Gm) * Gm;  // addcmul: v + (value * g) * g
    };
    if (coupled_wd) {
      const Packet Gi = G + wd * P;  // Adam: grad.add(param, alpha=wd)
      moments(Gi);
    } else {
      moments(G);
    }
    P = P + (neg_step_size * M) / (V.sqrt() / bc2_sqrt + eps);  // addcdiv: p + (value * m) / d
  };
  const std::int64_t body = n - n % kPacket;
  for (std::int64_t i = 0; i < body; i += kPacket) {
    Packet P = ConstMap(p + i), M = ConstMap(m + i), V = ConstMap(v + i);
    update(P, ConstMap(g + i), M, V);
    Map(p + i) = P;
    Map(m + i) = M;
    Map(v + i) = V;
  }
  if (body < n) {
    const auto t = static_cast<Eigen::Index>(n - body);
    using Tail = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
    using TailOut = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
    Packet P = Packet::Zero(), G = Packet::Zero(), M = Packet::Zero(), V = Packet::Zero();
    P.head(t) = Tail(p + body, t);
    G.head(t) = Tail(g + body, t);
    M.head(t) = Tail(m + body, t);
    V.head(t) = Tail(v + body, t);
    update(P, G, M, V);
    TailOut(p + body, t) = P.head(t);
    TailOut(m + body, t) = M.head(t);
    TailOut(v + body, t) = V.head(t);
  }
}

}  // namespace

void CpuBackend::sgd_update(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                            const SgdStep& step) {
  const bool momentum = step.momentum != 0.0;
  if (param.dtype() == DType::F64) {
    sgd_loop(param.data<double>(), grad.data<double>(),
             momentum ? momentum_buffer.data<double>() : nullptr, param.numel(), step);
  } else {
    sgd_loop(param.data<float>(), grad.data<float>(),
             momentum ? momentum_buffer.data<float>() : nullptr, param.numel(), step);
  }
}

void CpuBackend::adam_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                             const Tensor& exp_avg_sq, const AdamStep& step) {
  if (param.dtype() == DType::F64) {
    adam_loop(param.data<double>(), grad.data<double>(), exp_avg.data<double>(),
              exp_avg_sq.data<double>(), param.numel(), step);
  } else {
    adam_loop(param.data<float>(), grad.data<float>(), exp_avg.data<float>(),
              exp_avg_sq.data<float>(), param.numel(), step);
  }
}

}  // namespace ruccl::cpu
