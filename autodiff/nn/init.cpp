#include "autodiff/nn/init.h"

#include <cmath>

#include "tensor/ops/elementwise.h"

namespace ruccl::nn::init {

double calculate_gain(Nonlinearity nonlinearity, double negative_slope) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Sigmoid:
      return 1.0;
    case Nonlinearity::Tanh:
      return 5.0 / 3.0;
    case Nonlinearity::Relu:
      return std::sqrt(2.0);
    case Nonlinearity::LeakyRelu:
      return std::sqrt(2.0 / (1.0 + negative_slope * negative_slope));
  }
  return 1.0;
}

std::pair<std::int64_t, std::int64_t> fan_in_out(const Shape& shape) {
  RUCCL_CHECK(shape.size() >= 1, ValueError,
              "init: fan in and fan out need a parameter with at least 1 dim, got shape ", shape);
  if (shape.size() == 1) return {shape[0], shape[0]};
  std::int64_t receptive = 1;
  for (std::int64_t d = 2; d < shape.size(); ++d) receptive *= shape[d];
  return {shape[1] * receptive, shape[0] * receptive};
}

void uniform_(Param& param, double low, double high, Generator& gen) {
  Tensor u = Tensor::rand(param.shape(), gen, param.dtype(), param.value().device());
  param.set_value(ruccl::add(ruccl::mul(u, high - low), low));
}

void normal_(Param& param, double mean, double std, Generator& gen) {
  Tensor n = Tensor::randn(param.shape(), gen, param.dtype(), param.value().device());
  param.set_value(ruccl::add(ruccl::mul(n, std), mean));
}

void constant_(Param& param, double value) {
  param.set_value(Tensor::full(param.shape(), value, param.dtype(), param.value().device()));
}
void zeros_(Param& param) { constant_(param, 0.0); }
void ones_(Param& param) { constant_(param, 1.0); }

void xavier_uniform_(Param& param, Generator& gen, double gain) {
  const auto [fan_in, fan_out] = fan_in_out(param.shape());
  const double a = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  uniform_(param, -a, a, gen);
}

void xavier_normal_(Param& param, Generator& gen, double gain) {
  const auto [fan_in, fan_out] = fan_in_out(param.shape());
  normal_(param, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)), gen);
}

namespace {
double kaiming_std(const Param& param, double a, FanMode mode, Nonlinearity nonlinearity) {
  const auto [fan_in, fan_out] = fan_in_out(param.shape());
  const double fan = static_cast<double>(mode == FanMode::FanIn ? fan_in : fan_out);
  RUCCL_CHECK(fan > 0, ValueError, "init: kaiming needs a non-zero fan, got shape ", param.shape());
  return calculate_gain(nonlinearity, a) / std::sqrt(fan);
}
}  // namespace

void kaiming_uniform_(Param& param, Generator& gen, double a, FanMode mode,
                      Nonlinearity nonlinearity) {
  const double bound = std::sqrt(3.0) * kaiming_std(param, a, mode, nonlinearity);
  uniform_(param, -bound, bound, gen);
}

void kaiming_normal_(Param& param, Generator& gen, double a, FanMode mode,
                     Nonlinearity nonlinearity) {
  normal_(param, 0.0, kaiming_std(param, a, mode, nonlinearity), gen);
}

void uniform_(Param& param, double low, double high) {
  with_default_generator([&](Generator& g) { uniform_(param, low, high, g); });
}
void normal_(Param& param, double mean, double std) {
  with_default_generator([&](Generator& g) { normal_(param, mean, std, g); });
}
void xavier_uniform_(Param& param, double gain) {
  with_default_generator([&](Generator& g) { xavier_uniform_(param, g, gain); });
}
void xavier_normal_(Param& param, double gain) {
  with_default_generator([&](Generator& g) { xavier_normal_(param, g, gain); });
}
void kaiming_uniform_(Param& param, double a, FanMode mode, Nonlinearity nonlinearity) {
  with_default_generator([&](Generator& g) { kaiming_uniform_(param, g, a, mode, nonlinearity); });
}
void kaiming_normal_(Param& param, double a, FanMode mode, Nonlinearity nonlinearity) {
  with_default_generator([&](Generator& g) { kaiming_normal_(param, g, a, mode, nonlinearity); });
}

}  // namespace ruccl::nn::init
