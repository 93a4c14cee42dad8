#pragma once
// Initialisers (as torch.nn.init), drawing from a seeded Generator or, in the overloads without
// one, from the default generator (ruccl::manual_seed; locked for the whole draw). Each replaces
// the parameter's value with a new tensor of the same shape and dtype. Fans: for a [out, in, k...]
// weight, fan_in = in * prod(k), fan_out = out * prod(k); a 1-d parameter has fan_in = fan_out =
// its size.
#include <cstdint>
#include <utility>

#include "autodiff/nn/param.h"
#include "tensor/random/generator.h"

namespace ruccl::nn::init {

enum class FanMode { FanIn, FanOut };
enum class Nonlinearity { Linear, Sigmoid, Tanh, Relu, LeakyRelu };

/// torch.nn.init.calculate_gain: 1, 1, 5/3, sqrt(2), sqrt(2 / (1 + slope^2)).
double calculate_gain(Nonlinearity nonlinearity, double negative_slope = 0.01);
/// (fan_in, fan_out) of a weight of `shape` (see the file comment). ValueError for a 0-d shape.
std::pair<std::int64_t, std::int64_t> fan_in_out(const Shape& shape);

/// U(low, high).
void uniform_(Param& param, double low, double high, Generator& gen);
/// N(mean, std^2).
void normal_(Param& param, double mean, double std, Generator& gen);
void constant_(Param& param, double value);
void zeros_(Param& param);
void ones_(Param& param);
/// U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)).
void xavier_uniform_(Param& param, Generator& gen, double gain = 1.0);
/// N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out)).
void xavier_normal_(Param& param, Generator& gen, double gain = 1.0);
/// U(-b, b), b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a).
void kaiming_uniform_(Param& param, Generator& gen, double a = 0.0, FanMode mode = FanMode::FanIn,
                      Nonlinearity nonlinearity = Nonlinearity::LeakyRelu);
/// N(0, std^2), std = gain / sqrt(fan).
void kaiming_normal_(Param& param, Generator& gen, double a = 0.0, FanMode mode = FanMode::FanIn,
                     Nonlinearity nonlinearity = Nonlinearity::LeakyRelu);

// The same, from the default generator.
void uniform_(Param& param, double low = 0.0, double high = 1.0);
void normal_(Param& param, double mean = 0.0, double std = 1.0);
void xavier_uniform_(Param& param, double gain = 1.0);
void xavier_normal_(Param& param, double gain = 1.0);
void kaiming_uniform_(Param& param, double a = 0.0, FanMode mode = FanMode::FanIn,
                      Nonlinearity nonlinearity = Nonlinearity::LeakyRelu);
void kaiming_normal_(Param& param, double a = 0.0, FanMode mode = FanMode::FanIn,
                     Nonlinearity nonlinearity = Nonlinearity::LeakyRelu);

}  // namespace ruccl::nn::init
