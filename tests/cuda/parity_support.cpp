#include "tests/cuda/parity_support.h"

namespace ruccl::parity {

namespace {

using autodiff::Var;

/// d y / d inputs for every output element (row j = output j), fn evaluated on `device`.
std::vector<std::vector<double>> analytic_jacobians(
    const std::vector<Tensor>& inputs, const std::vector<bool>& diff,
    const std::function<Var(const std::vector<Var>&)>& fn, Device device) {
  std::vector<Var> leaves;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    leaves.emplace_back(inputs[i].to(device), diff[i]);
  const Var y = fn(leaves);
  REQUIRE(y.value().device() == device);
  const std::int64_t n_out = y.numel();
  std::vector<std::vector<double>> jac(inputs.size());
  for (std::int64_t j = 0; j < n_out; ++j) {
    for (Var& leaf : leaves) leaf.zero_grad();
    std::vector<double> seed(static_cast<std::size_t>(n_out), 0.0);
    seed[static_cast<std::size_t>(j)] = 1.0;
    y.backward(Tensor::from_vector<double>(seed, y.shape()).to(y.dtype()).to(device), true);
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!diff[i]) continue;
      const Tensor& g = leaves[i].grad();
      std::vector<double> gv(static_cast<std::size_t>(inputs[i].numel()), 0.0);
      if (g.defined()) {
        REQUIRE(g.device() == device);
        gv = g.to(Device::cpu()).to(DType::F64).to_vector<double>();
      }
      jac[i].insert(jac[i].end(), gv.begin(), gv.end());
    }
  }
  return jac;
}

}  // namespace

void require_gpu_gradcheck(const std::string& what, const std::vector<Tensor>& inputs,
                           const std::function<Var(const std::vector<Var>&)>& fn,
                           const std::vector<bool>& differentiable) {
  INFO("gradcheck: " << what);
  std::vector<bool> diff = differentiable;
  diff.resize(inputs.size(), true);
  const auto gpu = analytic_jacobians(inputs, diff, fn, kGpu);
  const auto cpu = analytic_jacobians(inputs, diff, fn, Device::cpu());
  constexpr double kEps = 1e-6;
  constexpr double kAtol = 1e-5;
  constexpr double kRtol = 1e-3;
  const autodiff::NoGradGuard no_grad;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!diff[i]) continue;
    REQUIRE(inputs[i].dtype() == DType::F64);
    const auto base = inputs[i].to_vector<double>();
    const std::size_t n_in = base.size();
    for (std::size_t k = 0; k < n_in; ++k) {
      std::vector<Var> args;
      for (const Tensor& t : inputs) args.emplace_back(t.to(kGpu));
      std::vector<double> v = base;
      v[k] = base[k] + kEps;
      args[i] = Var(Tensor::from_vector<double>(v, inputs[i].shape()).to(kGpu));
      const auto plus = fn(args).value().to(Device::cpu()).to_vector<double>();
      v[k] = base[k] - kEps;
      args[i] = Var(Tensor::from_vector<double>(v, inputs[i].shape()).to(kGpu));
      const auto minus = fn(args).value().to(Device::cpu()).to_vector<double>();
      for (std::size_t j = 0; j < plus.size(); ++j) {
        const double numeric = (plus[j] - minus[j]) / (2.0 * kEps);
        const double a = gpu[i][j * n_in + k];
        INFO("input " << i << " element " << k << " output " << j << ": cuda analytic " << a
                      << ", numeric " << numeric << ", cpu analytic " << cpu[i][j * n_in + k]);
        REQUIRE(std::abs(a - numeric) <= kAtol + kRtol * std::abs(numeric));
        REQUIRE(std::abs(a - cpu[i][j * n_in + k]) <= 1e-9 * std::max(1.0, std::abs(a)));
      }
    }
  }
}

}  // namespace ruccl::parity
