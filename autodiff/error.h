#pragma once
// Errors of the autodiff layer that are not about shapes or dtypes: the state of the tape.
#include "tensor/core/error.h"

namespace ruccl::autodiff {

/// Misuse of the tape: backward() on a value that needs no gradient, a second backward through a
/// graph freed by the first one, a backward rule that returns a gradient of the wrong shape.
class AutodiffError : public Error {
  using Error::Error;
};

}  // namespace ruccl::autodiff
