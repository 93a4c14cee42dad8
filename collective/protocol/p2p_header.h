#pragma once
// The header a point-to-point send puts before its tensor (Communicator::send / recv): the dtype
// and shape the receiver allocates from. It crosses processes, so it has a versioned
// little-endian encoding, field by field, and the decoder trusts nothing: every field is checked
// before anything is sized from it.
//
// Layout, version 1 (72 bytes; integers little-endian):
//   offset  bytes  field
//   0       1      version (1)
//   1       1      dtype (DType)
//   2       1      ndim, at most Shape::kMaxDims
//   3       5      zero
//   8       8 * kMaxDims  dims (int64, >= 0); those past ndim are zero
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "tensor/core/dtype.h"
#include "tensor/core/shape.h"

namespace ruccl {

inline constexpr std::uint8_t kP2PHeaderVersion = 1;
inline constexpr std::size_t kP2PHeaderBytes = 8 + 8 * Shape::kMaxDims;
using P2PHeaderBytes = std::array<std::uint8_t, kP2PHeaderBytes>;

/// The header of a tensor of `dtype` and `shape`.
P2PHeaderBytes encode_p2p_header(DType dtype, const Shape& shape);
/// Decodes a header. Returns "" and fills `dtype` and `shape`, or says what is wrong ("version 3
/// (expected 1)", "dtype 9 is no DType", "ndim 12 out of range [0, 8]", "dim 1 is -4", "the
/// tensor's byte size overflows"), leaving them unspecified.
std::string decode_p2p_header(std::span<const std::uint8_t, kP2PHeaderBytes> bytes, DType& dtype,
                              Shape& shape);

}  // namespace ruccl
