#pragma once
// The CUDA-vs-CPU parity harness: the same inputs through both backends, compared element by
// element. Integers and Bool must match exactly; floats within a tolerance per dtype (the GPU's
// math functions and reduction order differ from the CPU's in the last bits); NaN must meet NaN.
// Every test starts with require_gpu(): without a device it fails, it never passes silently.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "cuda/cuda.h"
#include "tensor/tensor.h"

namespace ruccl::parity {

inline const Device kGpu = Device::cuda(0);

/// Fails the current test case loudly, with the driver's reason, when no GPU is usable.
inline void require_gpu() {
  if (!cuda::cuda_available()) {
    FAIL("GPU tests need a CUDA device: " << cuda::device_status());
  }
}

/// Relative tolerance for values of `dtype` computed two ways.
inline double tolerance(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return 2e-3;
    case DType::BF16:
      return 1.6e-2;
    case DType::F32:
      return 2e-5;
    default:
      return 1e-11;
  }
}

/// REQUIREs that `gpu` (on the GPU) equals `cpu` (on the CPU): same shape and dtype, exact for
/// integers and Bool, within rtol (and the same absolute amount near 0) for floats.
inline void require_match(const Tensor& cpu, const Tensor& gpu, const std::string& what,
                          double rtol = -1.0) {
  INFO(what);
  REQUIRE(gpu.device() == kGpu);
  REQUIRE(cpu.shape() == gpu.shape());
  REQUIRE(cpu.dtype() == gpu.dtype());
  const Tensor back = gpu.to(Device::cpu());
  if (!is_floating(cpu.dtype())) {
    const auto a = cpu.to(DType::I64).to_vector<std::int64_t>();
    const auto b = back.to(DType::I64).to_vector<std::int64_t>();
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("element " << i);
      REQUIRE(a[i] == b[i]);
    }
    return;
  }
  const double tol = rtol >= 0 ? rtol : tolerance(cpu.dtype());
  const auto a = cpu.to(DType::F64).to_vector<double>();
  const auto b = back.to(DType::F64).to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": cpu " << a[i] << ", cuda " << b[i]);
    if (std::isnan(a[i]) || std::isnan(b[i])) {
      REQUIRE((std::isnan(a[i]) && std::isnan(b[i])));
    } else if (std::isinf(a[i]) || std::isinf(b[i])) {
      REQUIRE(a[i] == b[i]);
    } else {
      REQUIRE(std::abs(a[i] - b[i]) <= tol * std::max(1.0, std::abs(a[i])));
    }
  }
}

/// Runs `op` on the CPU inputs and on their GPU copies and requires the results to match.
inline void check_op(const std::string& what, const std::vector<Tensor>& inputs,
                     const std::function<Tensor(const std::vector<Tensor>&)>& op,
                     double rtol = -1.0) {
  std::vector<Tensor> on_gpu;
  for (const Tensor& t : inputs) on_gpu.push_back(t.to(kGpu));
  require_match(op(inputs), op(on_gpu), what, rtol);
}

/// Normal samples of `shape` as `dtype` (seeded: the same inputs every run).
inline Tensor randn(const Shape& shape, DType dtype = DType::F32, std::uint64_t seed = 1) {
  Generator gen(seed);
  return Tensor::randn(shape, gen, DType::F64).to(dtype);
}

/// Integers in [lo, hi) of `shape` as `dtype`.
inline Tensor randint(const Shape& shape, std::int64_t lo, std::int64_t hi, DType dtype,
                      std::uint64_t seed = 2) {
  Generator gen(seed);
  const Tensor u = Tensor::rand(shape, gen, DType::F64);
  const auto v = u.to_vector<double>();
  std::vector<std::int64_t> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    out[i] = lo + static_cast<std::int64_t>(v[i] * static_cast<double>(hi - lo));
  }
  return Tensor::from_vector(out, shape).to(dtype);
}

/// Every dtype `op` supports on the CUDA backend (which must be those the CPU supports).
inline std::vector<DType> dtypes_for(Op op) {
  std::vector<DType> out;
  for (DType dt :
       {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    if (backend_for(kGpu).supports(op, dt)) out.push_back(dt);
  }
  return out;
}

/// gradcheck on the GPU: the analytic gradient of fn at the F64 inputs, computed by the CUDA
/// backend (every input and seed on the GPU), against central differences also evaluated on the
/// GPU, and against the CPU's analytic gradient. Keep inputs small.
void require_gpu_gradcheck(
    const std::string& what, const std::vector<Tensor>& inputs,
    const std::function<autodiff::Var(const std::vector<autodiff::Var>&)>& fn,
    const std::vector<bool>& differentiable = {});

}  // namespace ruccl::parity
