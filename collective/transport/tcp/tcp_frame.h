#pragma once
// The frame of the TCP transport: every message between two ranks is a 64-byte header, then
// payload_bytes of payload. All integers little-endian, encoded field by field (never a memcpy of
// a struct); the header is self-checking (its own CRC-32C), the payload has a CRC-32C in the
// header. Layout, version 1:
//
//   offset  size  field
//   0       4     magic 0x4C435552 ("RUCL" as bytes)
//   4       2     version (1)          6   2  header_bytes (64)
//   8       1     type (FrameType)     9   1  flags            10  2  reserved (0)
//   12      4     payload_bytes (capped per type, see frame_payload_cap)
//   16      16    session id (the job's 128-bit random id)
//   32      8     seq: frames of one connection and direction are numbered 1, 2, 3 ... in order
//   40      8     tag: Data the message tag, Record the call seq, else 0
//   48      8     message_bytes: Data the total bytes of the message the frame belongs to, else 0
//   56      4     payload_crc (CRC-32C of the payload; 0 for an empty one or an unchecked one)
//   60      4     header_crc (CRC-32C of bytes 0..59)
//
// Flags: bit 0 (kFrameFlagUncheckedPayload), Data frames only: the sender computed no payload CRC
// (payload_crc is 0). A link sends them when its payload checksum is off (TcpTransportOptions::
// payload_checksum: by default off between two loopback endpoints, where the bytes never leave
// this machine's memory); a receiver whose own policy for the link is on refuses them. The header
// CRC is always there. Bit 1 (kFrameFlagMac), any type: a 16-byte tag follows the payload, the
// frame's MAC under RUCCL_INTEGRITY=mac (frame_mac.h: over the 64 header bytes and the payload);
// a receiver refuses a frame whose flag differs from its own setting. Other bits are refused.
//
// decode_frame_header checks, in this order, so that garbage is reported as garbage (not as a
// wrong session): magic, version, header_bytes, header_crc, type, flags and reserved, the
// payload cap of the type, the fields the type leaves 0, the session, the seq.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "collective/common/session_id.h"

namespace ruccl {

inline constexpr std::uint32_t kFrameMagic = 0x4C435552;  // "RUCL" as little-endian bytes
inline constexpr std::uint16_t kFrameVersion = 1;
inline constexpr std::size_t kFrameHeaderBytes = 64;
/// Flags bit 0: a Data frame whose payload carries no CRC-32C.
inline constexpr std::uint8_t kFrameFlagUncheckedPayload = 0x01;
/// Flags bit 1: a frame followed by a 16-byte MAC tag (RUCCL_INTEGRITY=mac).
inline constexpr std::uint8_t kFrameFlagMac = 0x02;
/// The largest Data payload a receiver accepts (senders cut messages into kPieceBytes frames).
inline constexpr std::size_t kMaxDataFramePayload = std::size_t{1} << 20;
/// The largest Abort payload (the encoder truncates the message to fit).
inline constexpr std::size_t kMaxAbortFramePayload = 4096;

/// What a frame carries.
enum class FrameType : std::uint8_t {
  Hello = 1,  ///< the first frame of a connection: HelloPayload (tcp_frame_payloads.h)
  Record,     ///< an encoded CallRecord (call_record_codec.h); tag = the call's seq
  Data,       ///< one piece of a tagged message
  Abort,      ///< AbortPayload: the group failed with this error
  Heartbeat,  ///< no payload: the peer is alive
  Goodbye,    ///< no payload: an orderly close follows
};

/// "Hello", "Record", ... ("unknown" for a value outside the enum).
std::string_view frame_type_name(FrameType type);

/// The most payload bytes a frame of `type` may carry: Hello exactly kHelloPayloadBytes, Record
/// kMaxEncodedCallRecordBytes, Data kMaxDataFramePayload, Abort kMaxAbortFramePayload, Heartbeat
/// and Goodbye 0.
std::size_t frame_payload_cap(FrameType type);

/// A decoded header (magic, version, header_bytes, flags, reserved and header_crc are implied).
struct FrameHeader {
  FrameType type = FrameType::Heartbeat;
  std::uint32_t payload_bytes = 0;
  SessionId session{};
  std::uint64_t seq = 0;
  std::uint64_t tag = 0;
  std::uint64_t message_bytes = 0;
  std::uint32_t payload_crc = 0;  ///< crc32c of the payload (0 for an empty one)
  /// Data only: the sender computed no payload CRC (kFrameFlagUncheckedPayload; payload_crc 0).
  bool unchecked_payload = false;
  /// A MAC tag follows the payload (kFrameFlagMac).
  bool mac = false;
};

/// Writes the 64 header bytes of `header` (computing header_crc). The caller sets payload_crc
/// (crc32c of the payload). Throws InternalError (a bug of the sender) for a header that
/// decode_frame_header would refuse: an unknown type, a payload over the type's cap, a nonzero
/// tag or message_bytes the type leaves 0, a nonzero payload_crc of an empty payload.
void encode_frame_header(const FrameHeader& header, std::span<std::uint8_t, kFrameHeaderBytes> out);

/// Decodes and checks a header received from a peer: returns "" and fills `out`, or the first
/// thing wrong ("bad magic 0x12345678 (expected 0x4C435552: not a ruccl peer)", "header CRC
/// mismatch", "frame seq 7 out of order (expected 5)", ...), phrased to follow "frame from rank
/// 3: ". `out` is unspecified on failure. The payload is checked separately, as it arrives
/// (payload_crc_matches or crc32c).
std::string decode_frame_header(std::span<const std::uint8_t, kFrameHeaderBytes> bytes,
                                const SessionId& expected_session, std::uint64_t expected_seq,
                                FrameHeader& out);

/// Whether `payload` (all of it) is what `header` announced: its size and its CRC-32C.
bool payload_crc_matches(const FrameHeader& header, std::span<const std::uint8_t> payload);

/// "payload CRC mismatch in Data frame seq 12 (computed 0x..., header says 0x...)": the message
/// for a payload whose crc32c, `computed`, differs from the header's.
std::string payload_crc_mismatch(const FrameHeader& header, std::uint32_t computed);

}  // namespace ruccl
