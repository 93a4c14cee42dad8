#pragma once
// The payloads of the TCP frames that carry structure (tcp_frame.h has the header): Hello, the
// first frame of every connection, and Abort, a group failure fanned out to every rank. Little-
// endian, field by field. Each decoder checks every length against the bytes present before it
// trusts it, refuses trailing bytes, and returns what was wrong.
//
// Hello, exactly 27 bytes:
//   offset  size  field
//   0       2     protocol version (kTcpProtocolVersion)
//   2       4     rank (u32, < world_size)
//   6       4     world_size (u32, 1 .. kMaxTcpWorldSize)
//   10      1     channel (TcpChannel: 0 control, 1 data)
//   11      16    session id
//
// Abort, at most kMaxAbortFramePayload (4096) bytes:
//   offset  size      field
//   0       1         kind (CollectiveErrorKind)
//   1       2         nranks (<= kMaxAbortRanks)
//   3       4*nranks  ranks (i32, each in [0, world_size), strictly increasing)
//   ...     2         message length, then that many bytes of UTF-8 without NUL (no trailing
//                     bytes)
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/transport/tcp/tcp_frame.h"

namespace ruccl {

/// The version of the conversation over a connection (which frames follow a Hello, and when);
/// kFrameVersion covers the header layout only.
inline constexpr std::uint16_t kTcpProtocolVersion = 1;
inline constexpr std::size_t kHelloPayloadBytes = 27;
/// The largest world a Hello may announce.
inline constexpr int kMaxTcpWorldSize = 65536;

/// What a connection is for: the control channel (records, aborts, heartbeats) or bulk data.
enum class TcpChannel : std::uint8_t { Control = 0, Data = 1 };

/// The first frame's payload: who is calling, for which job, on which channel.
struct HelloPayload {
  std::uint16_t version = kTcpProtocolVersion;
  int rank = 0;
  int world_size = 1;
  TcpChannel channel = TcpChannel::Control;
  SessionId session{};
};

/// Appends the kHelloPayloadBytes bytes of `hello` to `out` (written as given).
void encode_hello_payload(const HelloPayload& hello, std::vector<std::uint8_t>& out);

/// Decodes a Hello payload that fills `bytes` exactly. Returns "" and sets `out`, or the first
/// thing wrong ("Hello rank 4 out of range for world_size 4"), leaving `out` unspecified.
std::string decode_hello_payload(std::span<const std::uint8_t> bytes, HelloPayload& out);

/// The most ranks an Abort carries (the error's message names them too).
inline constexpr std::size_t kMaxAbortRanks = 512;

/// A decoded Abort: the error that failed the group on the sending rank.
struct AbortPayload {
  CollectiveErrorKind kind = CollectiveErrorKind::Aborted;
  std::vector<int> ranks;
  std::string message;

  /// The error itself, to raise on this rank.
  CollectiveError error() const { return CollectiveError(kind, message, ranks); }
};

/// Appends the Abort encoding of `error` to `out`: its kind, its ranks sorted without
/// duplicates (the first kMaxAbortRanks), and its message with invalid UTF-8 bytes replaced by
/// '?' and, when longer than the rest of kMaxAbortFramePayload allows, cut at a character
/// boundary and ended with "...". Never more than kMaxAbortFramePayload bytes.
void encode_abort_payload(const CollectiveError& error, std::vector<std::uint8_t>& out);

/// Decodes an Abort payload that fills `bytes` exactly, sent by a rank of a group of
/// `world_size`. Returns "" and sets `out`, or the first thing wrong, leaving `out` unspecified.
std::string decode_abort_payload(std::span<const std::uint8_t> bytes, int world_size,
                                 AbortPayload& out);

}  // namespace ruccl
