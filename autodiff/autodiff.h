#pragma once
// Umbrella header of the autodiff layer (the tape, ops, gradcheck and nn), with the tensor layer
// under it (Tensor and its operators: `Tensor - Tensor` compiles with this header alone).
#include "autodiff/engine.h"
#include "autodiff/error.h"
#include "autodiff/grad_mode.h"
#include "autodiff/gradcheck.h"
#include "autodiff/nn/nn.h"
#include "autodiff/node.h"
#include "autodiff/ops.h"
#include "autodiff/var.h"
#include "tensor/tensor.h"
