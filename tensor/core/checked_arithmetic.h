#pragma once
// Overflow-checked integer arithmetic for every size, stride, offset and byte count that is
// computed from caller-supplied numbers (Shape::numel, view bounds, Tensor::empty, the CPU
// allocator). Each function returns true when the exact result does not fit its type; `out` then
// holds the wrapped value and must not be used. The caller throws its op's error, so the numbers
// and the op reach the message. They wrap the GCC/Clang builtins: one instruction and a branch on
// x86-64 and AArch64, so they cost nothing measurable on the per-op fast path.
//
//   std::int64_t end;
//   RUCCL_CHECK(!add_overflows(start, length, end) && end <= size, IndexError, ...);
#include <cstddef>
#include <cstdint>

namespace ruccl {

/// a + b in int64; true when it overflows.
[[nodiscard]] inline bool add_overflows(std::int64_t a, std::int64_t b, std::int64_t& out) {
  return __builtin_add_overflow(a, b, &out);
}

/// a * b in int64; true when it overflows.
[[nodiscard]] inline bool mul_overflows(std::int64_t a, std::int64_t b, std::int64_t& out) {
  return __builtin_mul_overflow(a, b, &out);
}

/// The bytes of `count` elements of `element_size` bytes, in int64 (so the count also fits
/// size_t and ptrdiff_t, and byte offsets into it fit int64); true when it overflows or `count` is
/// negative.
[[nodiscard]] inline bool byte_size_overflows(std::int64_t count, std::size_t element_size,
                                              std::int64_t& out) {
  return count < 0 || __builtin_mul_overflow(count, element_size, &out);
}

/// `n` rounded up to a multiple of `unit` (> 0); true when the rounded size does not fit size_t.
[[nodiscard]] inline bool round_up_overflows(std::size_t n, std::size_t unit, std::size_t& out) {
  std::size_t padded = 0;
  if (__builtin_add_overflow(n, unit - 1, &padded)) return true;
  out = padded / unit * unit;
  return false;
}

}  // namespace ruccl
