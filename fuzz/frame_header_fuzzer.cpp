// libFuzzer target: what a rank does with the first bytes of every frame from a peer.
//
// Input: one mode byte, the 64 header bytes (zero-padded when the input is shorter), then the
// payload. The mode chooses what the receiver expects, so that the fuzzer can get past the
// session and seq checks: bit 0 expects the header's own session (else a fixed one), bit 1 its
// own seq (else mode >> 2), and the world size of an Abort is 1 + (mode >> 2).
//
// Checked: decode_frame_header never crashes and accepts only a header that is exactly the
// encoding of what it decoded, with its CRC right and its payload within the type's cap; the
// Hello, Abort and CallRecord payload decoders, run on the payload whatever the header says,
// never crash and accept only canonical encodings; crc32c equals the portable tables, also
// when continued at a split.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collective/common/crc32c.h"
#include "collective/protocol/call_record_codec.h"
#include "collective/transport/tcp/tcp_frame.h"
#include "collective/transport/tcp/tcp_frame_payloads.h"
#include "fuzz/fuzz_check.h"

using namespace ruccl;

namespace {

std::uint64_t le(const std::uint8_t* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
  return v;
}

void check_header(std::uint8_t mode, const std::array<std::uint8_t, kFrameHeaderBytes>& bytes,
                  std::span<const std::uint8_t> rest) {
  SessionId session;
  session.fill(0x5A);
  if (mode & 1) std::copy(bytes.begin() + 16, bytes.begin() + 32, session.begin());
  const std::uint64_t seq = (mode & 2) ? le(bytes.data() + 32, 8) : mode >> 2;
  FrameHeader h;
  if (!decode_frame_header(bytes, session, seq, h).empty()) return;
  std::array<std::uint8_t, kFrameHeaderBytes> again{};
  encode_frame_header(h, again);
  FUZZ_CHECK(again == bytes);
  FUZZ_CHECK(crc32c(bytes.data(), 60) == le(bytes.data() + 60, 4));
  FUZZ_CHECK(h.payload_bytes <= frame_payload_cap(h.type));
  FUZZ_CHECK(h.session == session && h.seq == seq);
  FUZZ_CHECK(!h.unchecked_payload || (h.type == FrameType::Data && h.payload_crc == 0));
  if (rest.size() >= h.payload_bytes) {
    const auto payload = rest.first(h.payload_bytes);
    FUZZ_CHECK(payload_crc_matches(h, payload) ==
               (crc32c_portable(payload.data(), payload.size()) == h.payload_crc));
  }
}

void check_payload_decoders(std::uint8_t mode, std::span<const std::uint8_t> rest) {
  HelloPayload hello;
  if (decode_hello_payload(rest, hello).empty()) {
    FUZZ_CHECK(hello.rank >= 0 && hello.rank < hello.world_size);
    std::vector<std::uint8_t> again;
    encode_hello_payload(hello, again);
    FUZZ_CHECK(std::equal(again.begin(), again.end(), rest.begin(), rest.end()));
  }
  AbortPayload abort;
  if (decode_abort_payload(rest, 1 + (mode >> 2), abort).empty()) {
    std::vector<std::uint8_t> again;
    encode_abort_payload(abort.error(), again);
    FUZZ_CHECK(std::equal(again.begin(), again.end(), rest.begin(), rest.end()));
  }
  CallRecord record;
  if (decode_call_record(rest, record).empty()) {
    std::vector<std::uint8_t> again;
    encode_call_record(record, again);
    FUZZ_CHECK(std::equal(again.begin(), again.end(), rest.begin(), rest.end()));
  }
}

void check_crc(std::uint8_t mode, std::span<const std::uint8_t> rest) {
  const std::uint32_t whole = crc32c_portable(rest.data(), rest.size());
  FUZZ_CHECK(crc32c(rest.data(), rest.size()) == whole);
  const std::size_t split = rest.empty() ? 0 : (std::size_t{mode} * 131) % (rest.size() + 1);
  FUZZ_CHECK(crc32c(rest.data() + split, rest.size() - split, crc32c(rest.data(), split)) == whole);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::uint8_t mode = size > 0 ? data[0] : 0;
  std::array<std::uint8_t, kFrameHeaderBytes> header{};
  const std::size_t header_part = size > 1 ? std::min(size - 1, kFrameHeaderBytes) : 0;
  if (header_part > 0) std::copy(data + 1, data + 1 + header_part, header.begin());
  const std::size_t used = std::min(size, 1 + kFrameHeaderBytes);
  const std::span<const std::uint8_t> rest(data + used, size - used);
  check_header(mode, header, rest);
  check_payload_decoders(mode, rest);
  check_crc(mode, rest);
  return 0;
}
