#pragma once
// Pieces: the unit in which a receiver sees a message (Transport::recv_with and friends) and the
// alignment every segment and chunk boundary keeps, so that no piece splits an element. Every rank
// cuts the same pieces; CommunicatorOptions::segment_bytes must be a multiple of kPieceAlign.
#include <cstddef>

namespace ruccl {

/// Pieces are at most this long (a reader notices a failed group within one piece: ~25 us of
/// memcpy) and, but the last, a multiple of kPieceAlign (the largest element size divides it).
inline constexpr std::size_t kPieceBytes = std::size_t{256} << 10;
inline constexpr std::size_t kPieceAlign = 64;

/// How many bytes of a `size`-byte message lie in the piece [offset, offset + nbytes).
inline std::size_t piece_bytes(std::size_t size, std::size_t offset, std::size_t nbytes) {
  return offset >= size ? 0 : (size - offset < nbytes ? size - offset : nbytes);
}

}  // namespace ruccl
