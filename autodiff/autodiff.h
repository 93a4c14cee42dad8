#pragma once
// Umbrella header of the autodiff layer (the tape, ops, gradcheck and nn).
#include "autodiff/engine.h"
#include "autodiff/error.h"
#include "autodiff/grad_mode.h"
#include "autodiff/gradcheck.h"
#include "autodiff/nn/nn.h"
#include "autodiff/node.h"
#include "autodiff/ops.h"
#include "autodiff/var.h"
