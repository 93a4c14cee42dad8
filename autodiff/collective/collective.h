#pragma once
// Umbrella header of the differentiable collectives (namespace ruccl::autodiff::collective).
#include "autodiff/collective/collective_ops.h"
#include "autodiff/collective/distributed_gradcheck.h"
#include "autodiff/collective/region_ops.h"
