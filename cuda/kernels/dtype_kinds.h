#pragma once
// Which dtypes each op accepts on the CUDA backend: the table every backend shares
// (tensor/backend/op_dtypes.h), so supports(op, dtype) answers the same on both devices.
// Host-only (no CUDA include): the backend's supports() and the kernels' dispatch both read it.
#include "tensor/backend/op_dtypes.h"

namespace ruccl::cuda {

/// A set of dtypes (tensor/backend/op_dtypes.h: the table every backend shares).
using Kinds = DTypeSet;
using ruccl::accepts;

}  // namespace ruccl::cuda
