#include "collective/transport/tcp/tcp_frame.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "collective/common/crc32c.h"
#include "collective/protocol/call_record_codec.h"
#include "collective/transport/tcp/tcp_frame_payloads.h"
#include "tensor/core/error.h"

namespace ruccl {

namespace {

constexpr std::size_t kHeaderCrcOffset = 60;
constexpr auto kLastFrameType = static_cast<std::uint8_t>(FrameType::Goodbye);

void put_le(std::span<std::uint8_t, kFrameHeaderBytes> out, std::size_t at, std::uint64_t v,
            int bytes) {
  for (int i = 0; i < bytes; ++i)
    out[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint64_t get_le(std::span<const std::uint8_t, kFrameHeaderBytes> in, std::size_t at,
                     int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t{in[at + static_cast<std::size_t>(i)]} << (8 * i);
  return v;
}

std::string hex(std::uint64_t v, int digits) {
  std::ostringstream out;
  out << "0x" << std::uppercase << std::hex << std::setw(digits) << std::setfill('0') << v;
  return out.str();
}

// The checks of the decoded fields (type known, payload within the cap, the fields the type
// leaves 0): what decode_frame_header reports and encode_frame_header asserts.
std::string field_error(const FrameHeader& h) {
  const auto type = static_cast<std::uint8_t>(h.type);
  if (type == 0 || type > kLastFrameType) return str("unknown frame type ", int{type});
  const std::string_view name = frame_type_name(h.type);
  const std::size_t cap = frame_payload_cap(h.type);
  if (h.type == FrameType::Hello && h.payload_bytes != cap) {
    return str("Hello payload ", h.payload_bytes, " bytes (expected ", cap, ")");
  }
  if (h.payload_bytes > cap) {
    if (cap == 0)
      return str(name, " frame with a payload of ", h.payload_bytes, " bytes (expected none)");
    return str(name, " payload ", h.payload_bytes, " bytes over the cap ", cap);
  }
  if (h.type == FrameType::Data) {
    if (h.payload_bytes > h.message_bytes) {
      return str("Data payload ", h.payload_bytes, " bytes larger than its message of ",
                 h.message_bytes, " bytes");
    }
  } else {
    if (h.message_bytes != 0) {
      return str(name, " frame message_bytes ", h.message_bytes, " (expected 0)");
    }
    if (h.tag != 0 && h.type != FrameType::Record) {
      return str(name, " frame tag ", h.tag, " (expected 0)");
    }
  }
  if (h.payload_bytes == 0 && h.payload_crc != 0) {
    return str(name, " frame payload_crc ", hex(h.payload_crc, 8),
               " for an empty payload (expected 0x00000000)");
  }
  if (h.unchecked_payload && h.type != FrameType::Data) {
    return str(name, " frame flagged unchecked (expected the flag on Data frames only)");
  }
  if (h.unchecked_payload && h.payload_crc != 0) {
    return str(name, " frame payload_crc ", hex(h.payload_crc, 8),
               " for an unchecked payload (expected 0x00000000)");
  }
  return "";
}

}  // namespace

std::string_view frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::Hello:
      return "Hello";
    case FrameType::Record:
      return "Record";
    case FrameType::Data:
      return "Data";
    case FrameType::Abort:
      return "Abort";
    case FrameType::Heartbeat:
      return "Heartbeat";
    case FrameType::Goodbye:
      return "Goodbye";
  }
  return "unknown";
}

std::size_t frame_payload_cap(FrameType type) {
  switch (type) {
    case FrameType::Hello:
      return kHelloPayloadBytes;
    case FrameType::Record:
      return kMaxEncodedCallRecordBytes;
    case FrameType::Data:
      return kMaxDataFramePayload;
    case FrameType::Abort:
      return kMaxAbortFramePayload;
    case FrameType::Heartbeat:
    case FrameType::Goodbye:
      return 0;
  }
  return 0;
}

void encode_frame_header(const FrameHeader& h, std::span<std::uint8_t, kFrameHeaderBytes> out) {
  const std::string error = field_error(h);
  RUCCL_ASSERT(error.empty(), "encode_frame_header: a header its peer would refuse: ", error);
  put_le(out, 0, kFrameMagic, 4);
  put_le(out, 4, kFrameVersion, 2);
  put_le(out, 6, kFrameHeaderBytes, 2);
  put_le(out, 8, static_cast<std::uint8_t>(h.type), 1);
  put_le(out, 9,
         (h.unchecked_payload ? kFrameFlagUncheckedPayload : 0) | (h.mac ? kFrameFlagMac : 0),
         1);              // flags
  put_le(out, 10, 0, 2);  // reserved
  put_le(out, 12, h.payload_bytes, 4);
  std::copy(h.session.begin(), h.session.end(), out.begin() + 16);
  put_le(out, 32, h.seq, 8);
  put_le(out, 40, h.tag, 8);
  put_le(out, 48, h.message_bytes, 8);
  put_le(out, 56, h.payload_crc, 4);
  put_le(out, kHeaderCrcOffset, crc32c(out.data(), kHeaderCrcOffset), 4);
}

std::string decode_frame_header(std::span<const std::uint8_t, kFrameHeaderBytes> in,
                                const SessionId& expected_session, std::uint64_t expected_seq,
                                FrameHeader& h) {
  const auto magic = static_cast<std::uint32_t>(get_le(in, 0, 4));
  if (magic != kFrameMagic) {
    return str("bad magic ", hex(magic, 8), " (expected ", hex(kFrameMagic, 8),
               ": not a ruccl peer)");
  }
  const auto version = static_cast<std::uint16_t>(get_le(in, 4, 2));
  if (version != kFrameVersion) {
    return str("unsupported frame version ", version, " (expected ", kFrameVersion, ")");
  }
  const auto header_bytes = static_cast<std::uint16_t>(get_le(in, 6, 2));
  if (header_bytes != kFrameHeaderBytes) {
    return str("frame header_bytes ", header_bytes, " (expected ", kFrameHeaderBytes, ")");
  }
  const auto header_crc = static_cast<std::uint32_t>(get_le(in, kHeaderCrcOffset, 4));
  const std::uint32_t computed = crc32c(in.data(), kHeaderCrcOffset);
  if (header_crc != computed) {
    return str("header CRC mismatch (computed ", hex(computed, 8), ", header says ",
               hex(header_crc, 8), ")");
  }
  const auto type = static_cast<std::uint8_t>(get_le(in, 8, 1));
  if (type == 0 || type > kLastFrameType) return str("unknown frame type ", int{type});
  h.type = static_cast<FrameType>(type);
  const auto flags = static_cast<std::uint8_t>(get_le(in, 9, 1));
  if ((flags & ~(kFrameFlagUncheckedPayload | kFrameFlagMac)) != 0) {
    return str("unknown frame flags ", hex(flags, 2), " (expected bits 0x01 and 0x02 only)");
  }
  h.unchecked_payload = (flags & kFrameFlagUncheckedPayload) != 0;
  h.mac = (flags & kFrameFlagMac) != 0;
  const auto reserved = static_cast<std::uint16_t>(get_le(in, 10, 2));
  if (reserved != 0)
    return str("nonzero reserved header field ", hex(reserved, 4), " (expected 0)");

  h.payload_bytes = static_cast<std::uint32_t>(get_le(in, 12, 4));
  h.tag = get_le(in, 40, 8);
  h.message_bytes = get_le(in, 48, 8);
  h.payload_crc = static_cast<std::uint32_t>(get_le(in, 56, 4));
  if (std::string error = field_error(h); !error.empty()) return error;

  std::copy(in.begin() + 16, in.begin() + 32, h.session.begin());
  if (h.session != expected_session) {
    // Only the first bytes of what came: enough to tell two jobs apart in a log, not the whole id.
    std::ostringstream got;
    for (std::size_t i = 0; i < 4; ++i)
      got << std::hex << std::setw(2) << std::setfill('0') << int{h.session[i]};
    return str("wrong session id (got ", got.str(),
               "..., expected this job's: a peer of another job or an earlier run)");
  }
  h.seq = get_le(in, 32, 8);
  if (h.seq != expected_seq) {
    return str("frame seq ", h.seq, " out of order (expected ", expected_seq, ")");
  }
  return "";
}

bool payload_crc_matches(const FrameHeader& header, std::span<const std::uint8_t> payload) {
  return payload.size() == header.payload_bytes &&
         crc32c(payload.data(), payload.size()) == header.payload_crc;
}

std::string payload_crc_mismatch(const FrameHeader& header, std::uint32_t computed) {
  return str("payload CRC mismatch in ", frame_type_name(header.type), " frame seq ", header.seq,
             " (computed ", hex(computed, 8), ", header says ", hex(header.payload_crc, 8), ")");
}

}  // namespace ruccl
