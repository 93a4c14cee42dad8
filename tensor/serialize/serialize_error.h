#pragma once
// The error thrown when a serialized object cannot be read back.
#include "tensor/core/error.h"

namespace ruccl {

/// A stream that does not hold what it claims: truncated data, an unknown format version, a byte
/// count that does not match the shape. (A bad dtype code is a DTypeError, a bad shape a
/// ShapeError.) Checkpoint code wraps it with the file name.
class SerializationError : public Error {
  using Error::Error;
};

}  // namespace ruccl
