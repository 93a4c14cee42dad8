#pragma once
// Losses in namespace nn (the same functions as ruccl::autodiff::mse_loss / cross_entropy).
#include "autodiff/ops/loss.h"

namespace ruccl::nn {

using autodiff::cross_entropy;
using autodiff::mse_loss;
using autodiff::Reduction;

}  // namespace ruccl::nn
