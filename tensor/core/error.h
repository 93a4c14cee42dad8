#pragma once
// The error model. Two tiers, visible at every call site:
//   RUCCL_CHECK(cond, ErrorType, msg...)  -- the caller's mistake: throws a typed ruccl::Error
//   whose
//                                            message names the op and says "expected X, got Y".
//   RUCCL_ASSERT(cond, msg...)            -- our own bug: throws InternalError (never aborts).
// g++ 12 has no <format>: messages are built with the variadic str(...) below.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ruccl {

/// Concatenates its arguments with operator<< into one string: str("expected ", 3, ", got ", 4).
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

/// Root of every exception ruCCL throws on purpose.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// A shape that does not fit the op (broadcasting, matmul, reshape, element counts).
class ShapeError : public Error {
  using Error::Error;
};
/// A dtype the op does not accept, or two dtypes that do not combine.
class DTypeError : public Error {
  using Error::Error;
};
/// Tensors on different devices, or a device that is not available.
class DeviceError : public Error {
  using Error::Error;
};
/// A dimension, index or position out of range.
class IndexError : public Error {
  using Error::Error;
};
/// An argument outside its domain that is not a shape, dtype, device or index (a step of 0, a bad
/// option value).
class ValueError : public Error {
  using Error::Error;
};
/// Memory a device cannot provide: the allocator failed for a size that is valid (the message
/// names the op, the shape and the bytes asked for).
class OutOfMemoryError : public Error {
  using Error::Error;
};
/// An op a backend does not implement: "not implemented: <Backend>::<op>".
class NotImplementedError : public Error {
  using Error::Error;
};
/// A broken internal invariant: a bug in ruCCL, never the caller's fault.
class InternalError : public Error {
  using Error::Error;
};

}  // namespace ruccl

/// Throws `ErrorType(str(msg...))` when `cond` is false. For the caller's mistakes.
#define RUCCL_CHECK(cond, ErrorType, ...)         \
  do {                                            \
    if (!(cond)) [[unlikely]] {                   \
      throw ErrorType(::ruccl::str(__VA_ARGS__)); \
    }                                             \
  } while (false)

/// Throws InternalError naming the condition, file and line. For ruCCL's own invariants.
#define RUCCL_ASSERT(cond, ...)                                                           \
  do {                                                                                    \
    if (!(cond)) [[unlikely]] {                                                           \
      throw ::ruccl::InternalError(::ruccl::str("internal error: ", #cond, " failed at ", \
                                                __FILE__, ":", __LINE__,                  \
                                                ": " __VA_OPT__(, ) __VA_ARGS__));        \
    }                                                                                     \
  } while (false)
