#pragma once
// The error a damaged, foreign or mismatching checkpoint raises.
#include <string>

#include "tensor/core/error.h"

namespace ruccl::optim {

/// A checkpoint file (or the state inside it) that cannot be used: missing, truncated, corrupted,
/// written by another format version, or describing a different model/optimizer/scheduler. The
/// message names the file (when there is one) and the reason.
class CheckpointError : public Error {
 public:
  using Error::Error;
};

}  // namespace ruccl::optim
