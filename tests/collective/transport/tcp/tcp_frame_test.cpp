// The TCP frame header: round trips, the pinned little-endian layout, every corrupted field
// refused with its name (in the documented check order), and random mutations never accepted
// unless the header's own CRC matches.
#include <catch2/catch.hpp>

#include <array>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "collective/common/crc32c.h"
#include "collective/protocol/call_record_codec.h"
#include "collective/transport/tcp/tcp_frame.h"
#include "collective/transport/tcp/tcp_frame_payloads.h"
#include "tensor/core/error.h"

using namespace ruccl;

namespace {

using HeaderBytes = std::array<std::uint8_t, kFrameHeaderBytes>;

const SessionId kSession = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                            0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF};

FrameHeader data_header() {
  FrameHeader h;
  h.type = FrameType::Data;
  h.payload_bytes = 256 << 10;
  h.session = kSession;
  h.seq = 0x0102030405060708;
  h.tag = 0x1112131415161718;
  h.message_bytes = 0x12345678;
  h.payload_crc = 0xA1B2C3D4;
  return h;
}

HeaderBytes encode(const FrameHeader& h) {
  HeaderBytes out{};
  encode_frame_header(h, out);
  return out;
}

std::string decode(const HeaderBytes& bytes, std::uint64_t expected_seq = 0x0102030405060708,
                   const SessionId& session = kSession) {
  FrameHeader h;
  return decode_frame_header(bytes, session, expected_seq, h);
}

void put_le(HeaderBytes& b, std::size_t at, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

void clear_tag_and_message(HeaderBytes& b) {
  put_le(b, 40, 0, 8);
  put_le(b, 48, 0, 8);
}

// Recomputes header_crc after an edit, so that the checks after the CRC see the edited field.
void reseal(HeaderBytes& b) { put_le(b, 60, crc32c(b.data(), 60), 4); }

}  // namespace

TEST_CASE("A frame header survives its encoding for every frame type", "[collective][tcp]") {
  for (std::uint8_t t = 1; t <= 6; ++t) {
    FrameHeader h;
    h.type = static_cast<FrameType>(t);
    h.session = kSession;
    h.seq = 1 + t;
    if (h.type == FrameType::Hello) h.payload_bytes = kHelloPayloadBytes;
    if (h.type == FrameType::Record) {
      h.payload_bytes = kMaxEncodedCallRecordBytes;
      h.tag = 77;
    }
    if (h.type == FrameType::Data) {
      h.payload_bytes = kMaxDataFramePayload;
      h.tag = ~std::uint64_t{0};
      h.message_bytes = ~std::uint64_t{0};
    }
    if (h.type == FrameType::Abort) h.payload_bytes = kMaxAbortFramePayload;
    if (h.payload_bytes != 0) h.payload_crc = 0xFFFFFFFF;
    INFO("type " << frame_type_name(h.type));
    REQUIRE(frame_payload_cap(h.type) >= h.payload_bytes);
    FrameHeader back;
    REQUIRE(decode_frame_header(encode(h), kSession, h.seq, back) == "");
    REQUIRE(back.type == h.type);
    REQUIRE(back.payload_bytes == h.payload_bytes);
    REQUIRE(back.session == h.session);
    REQUIRE(back.seq == h.seq);
    REQUIRE(back.tag == h.tag);
    REQUIRE(back.message_bytes == h.message_bytes);
    REQUIRE(back.payload_crc == h.payload_crc);
  }
}

TEST_CASE("The frame header layout is pinned byte for byte", "[collective][tcp]") {
  // Version 1 of the wire format: changing any of these bytes breaks every deployed peer.
  const HeaderBytes golden = {0x52, 0x55, 0x43, 0x4C, 0x01, 0x00, 0x40, 0x00, 0x03, 0x00, 0x00,
                              0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55,
                              0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF, 0x08,
                              0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0x18, 0x17, 0x16, 0x15,
                              0x14, 0x13, 0x12, 0x11, 0x78, 0x56, 0x34, 0x12, 0x00, 0x00, 0x00,
                              0x00, 0xD4, 0xC3, 0xB2, 0xA1, 0x58, 0x9D, 0x77, 0x22};
  const HeaderBytes bytes = encode(data_header());
  for (std::size_t i = 0; i < kFrameHeaderBytes; ++i) {
    INFO("byte " << i);
    REQUIRE(int{bytes[i]} == int{golden[i]});
  }
  REQUIRE(std::string(reinterpret_cast<const char*>(golden.data()), 4) == "RUCL");
  REQUIRE(decode(golden) == "");
}

TEST_CASE("Each corrupted header field is refused with its name", "[collective][tcp]") {
  struct Corruption {
    const char* what;
    std::function<void(HeaderBytes&)> edit;
    bool reseal;
    std::string expected;
  };
  const auto heartbeat = [] {
    FrameHeader h;
    h.session = kSession;
    h.seq = 0x0102030405060708;
    return encode(h);
  };
  const std::vector<Corruption> cases = {
      {"magic", [](HeaderBytes& b) { put_le(b, 0, 0x12345678, 4); }, false,
       "bad magic 0x12345678 (expected 0x4C435552: not a ruccl peer)"},
      {"version", [](HeaderBytes& b) { put_le(b, 4, 9, 2); }, false,
       "unsupported frame version 9 (expected 1)"},
      {"header_bytes", [](HeaderBytes& b) { put_le(b, 6, 80, 2); }, false,
       "frame header_bytes 80 (expected 64)"},
      {"a bit of seq", [](HeaderBytes& b) { b[33] ^= 0x10; }, false, "header CRC mismatch"},
      {"header_crc", [](HeaderBytes& b) { b[63] ^= 0x01; }, false, "header CRC mismatch"},
      {"type 0", [](HeaderBytes& b) { b[8] = 0; }, true, "unknown frame type 0"},
      {"type 42", [](HeaderBytes& b) { b[8] = 42; }, true, "unknown frame type 42"},
      {"flags", [](HeaderBytes& b) { b[9] = 5; }, true,
       "unknown frame flags 0x05 (expected bits 0x01 and 0x02 only)"},
      {"reserved", [](HeaderBytes& b) { put_le(b, 10, 0x1234, 2); }, true,
       "nonzero reserved header field 0x1234 (expected 0)"},
      {"Data payload_bytes", [](HeaderBytes& b) { put_le(b, 12, 0xFFFFFFFF, 4); }, true,
       "Data payload 4294967295 bytes over the cap 1048576"},
      {"Data payload past its message", [](HeaderBytes& b) { put_le(b, 48, 1000, 8); }, true,
       "Data payload 262144 bytes larger than its message of 1000 bytes"},
      {"Hello size",
       [](HeaderBytes& b) {
         b[8] = 1;
         clear_tag_and_message(b);
       },
       true, "Hello payload 262144 bytes (expected 27)"},
      {"Record size",
       [](HeaderBytes& b) {
         b[8] = 2;
         put_le(b, 48, 0, 8);
         put_le(b, 12, kMaxEncodedCallRecordBytes + 1, 4);
       },
       true,
       "Record payload " + std::to_string(kMaxEncodedCallRecordBytes + 1) + " bytes over the cap " +
           std::to_string(kMaxEncodedCallRecordBytes)},
      {"Abort size",
       [](HeaderBytes& b) {
         b[8] = 4;
         clear_tag_and_message(b);
         put_le(b, 12, 4097, 4);
       },
       true, "Abort payload 4097 bytes over the cap 4096"},
      {"Record message_bytes",
       [](HeaderBytes& b) {
         b[8] = 2;
         put_le(b, 12, 100, 4);
       },
       true, "Record frame message_bytes 305419896 (expected 0)"},
      {"Abort tag",
       [](HeaderBytes& b) {
         b[8] = 4;
         put_le(b, 12, 100, 4);
         put_le(b, 48, 0, 8);
       },
       true, "Abort frame tag 1230066625199609624 (expected 0)"},
      {"session", [](HeaderBytes& b) { b[31] ^= 0xFF; }, true,
       "wrong session id (got 00112233..., expected this job's: a peer of another job or an "
       "earlier run)"},
      {"seq", [](HeaderBytes& b) { put_le(b, 32, 7, 8); }, true, "frame seq 7 out of order"},
  };
  for (const Corruption& c : cases) {
    INFO("corrupted: " << c.what);
    HeaderBytes bytes = encode(data_header());
    c.edit(bytes);
    if (c.reseal) reseal(bytes);
    REQUIRE_THAT(decode(bytes), Catch::StartsWith(c.expected));
  }
  HeaderBytes seq7 = encode(data_header());
  put_le(seq7, 32, 7, 8);
  reseal(seq7);
  REQUIRE(decode(seq7, 5) == "frame seq 7 out of order (expected 5)");

  // Frames without a payload: no payload bytes, and no CRC of one.
  HeaderBytes hb = heartbeat();
  REQUIRE(decode(hb) == "");
  put_le(hb, 12, 1, 4);
  reseal(hb);
  REQUIRE(decode(hb) == "Heartbeat frame with a payload of 1 bytes (expected none)");
  hb = heartbeat();
  put_le(hb, 56, 0xDEADBEEF, 4);
  reseal(hb);
  REQUIRE(decode(hb) ==
          "Heartbeat frame payload_crc 0xDEADBEEF for an empty payload (expected 0x00000000)");
}

TEST_CASE("The unchecked-payload flag round-trips on Data frames only, with no payload CRC",
          "[collective][tcp]") {
  FrameHeader h = data_header();
  h.payload_crc = 0;
  h.unchecked_payload = true;
  HeaderBytes bytes = encode(h);
  REQUIRE(int{bytes[9]} == int{kFrameFlagUncheckedPayload});
  FrameHeader back;
  REQUIRE(decode_frame_header(bytes, kSession, h.seq, back) == "");
  REQUIRE(back.unchecked_payload);
  REQUIRE(back.payload_crc == 0);
  REQUIRE(decode_frame_header(encode(data_header()), kSession, h.seq, back) == "");
  REQUIRE_FALSE(back.unchecked_payload);

  // Flagged yet carrying a CRC, or flagged on a frame that is not Data: refused.
  HeaderBytes with_crc = bytes;
  put_le(with_crc, 56, 0x1234, 4);
  reseal(with_crc);
  REQUIRE(decode(with_crc) ==
          "Data frame payload_crc 0x00001234 for an unchecked payload (expected 0x00000000)");
  FrameHeader hb;
  hb.session = kSession;
  hb.seq = h.seq;
  HeaderBytes flagged_heartbeat = encode(hb);
  flagged_heartbeat[9] = kFrameFlagUncheckedPayload;
  reseal(flagged_heartbeat);
  REQUIRE(decode(flagged_heartbeat) ==
          "Heartbeat frame flagged unchecked (expected the flag on Data frames only)");
  h.type = FrameType::Record;
  h.message_bytes = 0;
  HeaderBytes out{};
  REQUIRE_THROWS_AS(encode_frame_header(h, out), InternalError);
}

TEST_CASE("The MAC flag round-trips on every frame type, beside the unchecked-payload flag",
          "[collective][tcp][security]") {
  FrameHeader h = data_header();
  h.mac = true;
  FrameHeader back;
  REQUIRE(decode_frame_header(encode(h), kSession, h.seq, back) == "");
  CHECK(back.mac);
  CHECK_FALSE(back.unchecked_payload);
  h.payload_crc = 0;
  h.unchecked_payload = true;
  const HeaderBytes both = encode(h);
  CHECK(int{both[9]} == int{kFrameFlagUncheckedPayload | kFrameFlagMac});
  REQUIRE(decode_frame_header(both, kSession, h.seq, back) == "");
  CHECK((back.mac && back.unchecked_payload));
  FrameHeader hb;
  hb.session = kSession;
  hb.seq = h.seq;
  hb.mac = true;
  REQUIRE(decode_frame_header(encode(hb), kSession, h.seq, back) == "");
  CHECK(back.mac);
  CHECK(back.type == FrameType::Heartbeat);
  REQUIRE(decode_frame_header(encode(data_header()), kSession, h.seq, back) == "");
  CHECK_FALSE(back.mac);
}

TEST_CASE("Encoding a header its peer would refuse is an internal error", "[collective][tcp]") {
  HeaderBytes out{};
  FrameHeader h = data_header();
  h.payload_bytes = kMaxDataFramePayload + 1;
  h.message_bytes = ~std::uint64_t{0};
  REQUIRE_THROWS_WITH(encode_frame_header(h, out),
                      Catch::Contains("Data payload 1048577 bytes over the cap 1048576"));
  FrameHeader heartbeat;
  heartbeat.tag = 3;
  REQUIRE_THROWS_AS(encode_frame_header(heartbeat, out), InternalError);
  heartbeat.tag = 0;
  heartbeat.type = static_cast<FrameType>(9);
  REQUIRE_THROWS_WITH(encode_frame_header(heartbeat, out), Catch::Contains("unknown frame type 9"));
}

TEST_CASE("A garbled header is reported as garbage before any session or seq complaint",
          "[collective][tcp]") {
  // Wrong session and seq as well as each earlier fault: the earlier fault is what is named.
  const SessionId other{};
  HeaderBytes bytes = encode(data_header());
  REQUIRE_THAT(decode(bytes, 99, other), Catch::StartsWith("wrong session id"));
  bytes[40] ^= 1;  // not resealed
  REQUIRE_THAT(decode(bytes, 99, other), Catch::StartsWith("header CRC mismatch"));
  bytes[4] = 2;
  REQUIRE_THAT(decode(bytes, 99, other), Catch::StartsWith("unsupported frame version 2"));
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n";
  std::copy(http.begin(), http.end(), bytes.begin());
  REQUIRE_THAT(decode(bytes, 99, other), Catch::StartsWith("bad magic 0x20544547"));
  HeaderBytes zeros{};
  REQUIRE_THAT(decode(zeros, 99, other), Catch::StartsWith("bad magic 0x00000000"));
}

TEST_CASE("A payload matches its header only with the right size and CRC-32C",
          "[collective][tcp]") {
  std::vector<std::uint8_t> payload(1000);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<std::uint8_t>(i * 7);
  FrameHeader h = data_header();
  h.payload_bytes = 1000;
  h.payload_crc = crc32c(payload.data(), payload.size());
  REQUIRE(payload_crc_matches(h, payload));
  // Verified piece by piece as it arrives, the same value.
  REQUIRE(crc32c(payload.data() + 400, 600, crc32c(payload.data(), 400)) == h.payload_crc);
  REQUIRE_FALSE(payload_crc_matches(h, std::span(payload).first(999)));
  payload[500] ^= 0x40;
  REQUIRE_FALSE(payload_crc_matches(h, payload));
  const std::uint32_t bad = crc32c(payload.data(), payload.size());
  REQUIRE_THAT(payload_crc_mismatch(h, bad),
               Catch::StartsWith("payload CRC mismatch in Data frame seq 72623859790382856 "
                                 "(computed 0x"));
  FrameHeader empty;
  REQUIRE(payload_crc_matches(empty, {}));
}

TEST_CASE("Random mutations of a header are never accepted unless its CRC matches",
          "[collective][tcp]") {
  std::mt19937_64 rng(12);
  std::vector<HeaderBytes> valid;
  for (std::uint8_t t = 1; t <= 6; ++t) {
    FrameHeader h = data_header();
    h.type = static_cast<FrameType>(t);
    if (h.type != FrameType::Data) h.message_bytes = 0;
    if (h.type != FrameType::Data && h.type != FrameType::Record) h.tag = 0;
    h.payload_bytes = h.type == FrameType::Hello ? kHelloPayloadBytes
                      : h.type == FrameType::Heartbeat || h.type == FrameType::Goodbye ? 0
                                                                                       : 100;
    if (h.payload_bytes == 0) h.payload_crc = 0;
    valid.push_back(encode(h));
    REQUIRE(decode(valid.back()) == "");
  }
  int accepted_resealed = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const HeaderBytes& original = valid[static_cast<std::size_t>(trial) % valid.size()];
    HeaderBytes bytes = original;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e)
      bytes[rng() % kFrameHeaderBytes] = static_cast<std::uint8_t>(rng());
    const bool resealed = trial % 2 == 1;  // half reach the checks after the CRC
    if (resealed) reseal(bytes);
    INFO("trial " << trial);
    FrameHeader h;
    const std::string error = decode_frame_header(bytes, kSession, 0x0102030405060708, h);
    if (bytes == original) {
      REQUIRE(error == "");
      continue;
    }
    if (!resealed) {
      // Up to 4 changed bytes of 60 (or of the CRC itself): CRC-32C detects every such change
      // whose bits span at most 32 and almost all others; the header check must name the CRC
      // or a field checked before it.
      REQUIRE(error != "");
      continue;
    }
    if (error.empty()) {
      // Accepted: a header that means exactly what its bytes say.
      ++accepted_resealed;
      REQUIRE(crc32c(bytes.data(), 60) ==
              (std::uint32_t{bytes[60]} | std::uint32_t{bytes[61]} << 8 |
               std::uint32_t{bytes[62]} << 16 | std::uint32_t{bytes[63]} << 24));
      REQUIRE(encode(h) == bytes);
    }
  }
  // Edits of tag, payload_crc and in-range payload sizes are valid headers: some must pass.
  REQUIRE(accepted_resealed > 0);
}
