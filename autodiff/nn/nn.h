#pragma once
// Umbrella header of ruccl::nn.
#include "autodiff/nn/activation.h"
#include "autodiff/nn/attention.h"
#include "autodiff/nn/dropout.h"
#include "autodiff/nn/embedding.h"
#include "autodiff/nn/init.h"
#include "autodiff/nn/layer_norm.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/module.h"
#include "autodiff/nn/param.h"
#include "autodiff/nn/sequential.h"
