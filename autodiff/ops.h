#pragma once
// Every differentiable op on Var.
#include "autodiff/ops/attention.h"
#include "autodiff/ops/conv.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/elementwise_math.h"
#include "autodiff/ops/index.h"
#include "autodiff/ops/linalg.h"
#include "autodiff/ops/loss.h"
#include "autodiff/ops/masking.h"
#include "autodiff/ops/reduce.h"
#include "autodiff/ops/shape.h"
#include "autodiff/ops/sort_scan.h"
#include "autodiff/ops/sum_to.h"
