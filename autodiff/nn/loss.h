#pragma once
// Losses in namespace nn (the same functions as in ruccl::autodiff, autodiff/ops/loss.h).
#include "autodiff/ops/loss.h"

namespace ruccl::nn {

using autodiff::BceOptions;
using autodiff::binary_cross_entropy_with_logits;
using autodiff::ClassLossOptions;
using autodiff::cross_entropy;
using autodiff::mse_loss;
using autodiff::nll_loss;
using autodiff::Reduction;

}  // namespace ruccl::nn
