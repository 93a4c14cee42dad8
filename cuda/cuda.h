#pragma once
// Umbrella header of the CUDA layer (built only with RUCCL_WITH_CUDA; see ruccl/config.h).
#include "cuda/backend/cuda_backend.h"
#include "cuda/core/check.h"
#include "cuda/core/cuda_error.h"
#include "cuda/core/device.h"
#include "cuda/core/self_test.h"
