// The Hello and Abort payloads of the TCP frames: round trips, the pinned Hello layout, every
// truncation and corruption refused with a reason, and random mutations that never crash.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "collective/transport/tcp/tcp_frame_payloads.h"

using namespace ruccl;

namespace {

const SessionId kSession = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

std::vector<std::uint8_t> encode(const HelloPayload& h) {
  std::vector<std::uint8_t> out;
  encode_hello_payload(h, out);
  return out;
}

std::vector<std::uint8_t> encode(const CollectiveError& e) {
  std::vector<std::uint8_t> out;
  encode_abort_payload(e, out);
  return out;
}

std::string decode_hello(const std::vector<std::uint8_t>& bytes) {
  HelloPayload h;
  return decode_hello_payload(bytes, h);
}

std::string decode_abort(const std::vector<std::uint8_t>& bytes, int world = 8) {
  AbortPayload a;
  return decode_abort_payload(bytes, world, a);
}

void put_le(std::vector<std::uint8_t>& b, std::size_t at, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

TEST_CASE("A Hello payload survives its encoding and its layout is pinned", "[collective][tcp]") {
  HelloPayload h;
  h.rank = 65534;
  h.world_size = 65535;
  h.channel = TcpChannel::Data;
  h.session = kSession;
  const auto bytes = encode(h);
  const std::vector<std::uint8_t> golden = {0x01, 0x00, 0xFE, 0xFF, 0x00, 0x00, 0xFF, 0xFF, 0x00,
                                            0x00, 0x01, 1,    2,    3,    4,    5,    6,    7,
                                            8,    9,    10,   11,   12,   13,   14,   15,   16};
  REQUIRE(bytes == golden);
  REQUIRE(bytes.size() == kHelloPayloadBytes);
  HelloPayload back;
  REQUIRE(decode_hello_payload(bytes, back) == "");
  REQUIRE(back.version == kTcpProtocolVersion);
  REQUIRE(back.rank == 65534);
  REQUIRE(back.world_size == 65535);
  REQUIRE(back.channel == TcpChannel::Data);
  REQUIRE(back.session == kSession);
  HelloPayload single;  // rank 0 of 1 on the control channel
  REQUIRE(decode_hello(encode(single)) == "");
}

TEST_CASE("A truncated or long or corrupted Hello is refused with a reason", "[collective][tcp]") {
  HelloPayload h;
  h.rank = 3;
  h.world_size = 4;
  h.session = kSession;
  const auto good = encode(h);
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("first " << n << " bytes");
    REQUIRE(decode_hello(std::vector(good.begin(), good.begin() + static_cast<long>(n))) ==
            "Hello payload of " + std::to_string(n) + " bytes (expected 27)");
  }
  auto longer = good;
  longer.push_back(0);
  REQUIRE(decode_hello(longer) == "Hello payload of 28 bytes (expected 27)");

  struct Corruption {
    std::size_t at;
    std::uint64_t value;
    int bytes;
    std::string expected;
  };
  const std::vector<Corruption> cases = {
      {0, 2, 2, "unsupported TCP protocol version 2 in Hello (expected 1)"},
      {2, 4, 4, "Hello rank 4 out of range for world_size 4"},
      {2, 0xFFFFFFFF, 4, "Hello rank 4294967295 out of range for world_size 4"},
      {6, 0, 4, "Hello world_size 0 out of range [1, 65536]"},
      {6, 65537, 4, "Hello world_size 65537 out of range [1, 65536]"},
      {6, 0x80000000, 4, "Hello world_size 2147483648 out of range [1, 65536]"},
      {10, 2, 1, "Hello channel 2 is neither 0 (control) nor 1 (data)"},
  };
  for (const Corruption& c : cases) {
    INFO("expected: " << c.expected);
    auto bytes = good;
    put_le(bytes, c.at, c.value, c.bytes);
    REQUIRE(decode_hello(bytes) == c.expected);
  }
}

TEST_CASE("An Abort payload carries the error's kind and ranks and message", "[collective][tcp]") {
  const CollectiveError error(CollectiveErrorKind::PeerLost, "rank 5 lost: connection reset (é✓)",
                              {5, 2, 5});
  const auto bytes = encode(error);
  AbortPayload back;
  REQUIRE(decode_abort_payload(bytes, 8, back) == "");
  REQUIRE(back.kind == CollectiveErrorKind::PeerLost);
  REQUIRE(back.ranks == std::vector<int>{2, 5});  // sorted, without duplicates
  REQUIRE(back.message == "rank 5 lost: connection reset (é✓)");
  const CollectiveError raised = back.error();
  REQUIRE(raised.kind() == CollectiveErrorKind::PeerLost);
  REQUIRE(std::string(raised.what()) == back.message);
  REQUIRE(raised.ranks() == back.ranks);
  // Layout: kind, nranks, ranks, message length, message.
  REQUIRE(int{bytes[0]} == static_cast<int>(CollectiveErrorKind::PeerLost));
  REQUIRE(bytes.size() == 1 + 2 + 4 * 2 + 2 + back.message.size());
  REQUIRE(decode_abort(encode(CollectiveError(CollectiveErrorKind::Aborted, ""))) == "");
}

TEST_CASE("An Abort of a long message or many ranks is cut to fit 4096 bytes",
          "[collective][tcp]") {
  std::vector<int> ranks(3000);
  for (int r = 0; r < 3000; ++r) ranks[static_cast<std::size_t>(r)] = 2999 - r;
  std::string message;
  while (message.size() < 10000) message += "ранг ";  // two-byte characters, to cut between
  const auto bytes = encode(CollectiveError(CollectiveErrorKind::Timeout, message, ranks));
  REQUIRE(bytes.size() <= kMaxAbortFramePayload);
  AbortPayload back;
  REQUIRE(decode_abort_payload(bytes, 3000, back) == "");
  REQUIRE(back.ranks.size() == kMaxAbortRanks);
  REQUIRE(back.ranks.front() == 0);
  REQUIRE(back.ranks.back() == static_cast<int>(kMaxAbortRanks) - 1);
  REQUIRE(back.message.size() > 2000);
  REQUIRE_THAT(back.message, Catch::EndsWith("..."));
  REQUIRE(message.compare(0, back.message.size() - 3, back.message, 0, back.message.size() - 3) ==
          0);
  // Bytes that are not UTF-8 become '?', so that the receiver can insist on UTF-8.
  const std::string latin1 = "caf\xE9 \xC0\xAF \xED\xA0\x80 ok";
  REQUIRE(decode_abort_payload(
              encode(CollectiveError(CollectiveErrorKind::InvalidArgument, latin1)), 1, back) ==
          "");
  REQUIRE(back.message == "caf? ?? ??? ok");
}

TEST_CASE("A truncated or corrupted Abort is refused with a reason", "[collective][tcp]") {
  const auto good =
      encode(CollectiveError(CollectiveErrorKind::Timeout, "ranks 1, 3 missing", {1, 3}));
  REQUIRE(decode_abort(good) == "");
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("first " << n << " bytes");
    REQUIRE_THAT(decode_abort(std::vector(good.begin(), good.begin() + static_cast<long>(n))),
                 Catch::StartsWith("truncated Abort: "));
  }
  auto longer = good;
  longer.push_back('x');
  REQUIRE(decode_abort(longer) == "Abort has 1 unexpected bytes after it");
  REQUIRE(decode_abort(std::vector<std::uint8_t>(4097, 0)) ==
          "Abort payload of 4097 bytes over the cap 4096");

  struct Corruption {
    std::size_t at;
    std::uint64_t value;
    int bytes;
    std::string expected;
  };
  const std::vector<Corruption> cases = {
      {0, 17, 1, "Abort kind 17 is no CollectiveErrorKind"},
      {1, 513, 2, "Abort nranks 513 over the cap 512"},
      {1, 300, 2, "truncated Abort: the ranks needs 1200 bytes, 28 left"},
      {3, 8, 4, "Abort rank 8 out of range for world_size 8"},
      {3, 0xFFFFFFFF, 4, "Abort rank -1 out of range for world_size 8"},
      {7, 1, 4, "Abort ranks not strictly increasing: 1 after 1"},
      {11, 0xFFFF, 2, "truncated Abort: the message needs 65535 bytes, 18 left"},
      {13, 0xFF, 1, "Abort message is not UTF-8 (byte 0)"},
      {14, 0xC0, 1, "Abort message is not UTF-8 (byte 1)"},
      {15, 0x00, 1, "Abort message contains a NUL (byte 2)"},
  };
  for (const Corruption& c : cases) {
    INFO("expected: " << c.expected);
    auto bytes = good;
    put_le(bytes, c.at, c.value, c.bytes);
    REQUIRE(decode_abort(bytes) == c.expected);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8 either.
  for (const std::string bad : {"\xC1\xBF", "\xE0\x9F\xBF", "\xED\xBF\xBF", "\xF4\x90\x80\x80",
                                "\xF0\x8F\xBF\xBF", "\xE2\x82", "\x80"}) {
    std::vector<std::uint8_t> bytes = {0, 0, 0, static_cast<std::uint8_t>(bad.size()), 0};
    bytes.insert(bytes.end(), bad.begin(), bad.end());
    REQUIRE(decode_abort(bytes) == "Abort message is not UTF-8 (byte 0)");
  }
}

TEST_CASE("Random mutations of Hello and Abort payloads never crash a decoder",
          "[collective][tcp]") {
  std::mt19937_64 rng(21);
  HelloPayload hello;
  hello.rank = 2;
  hello.world_size = 3;
  const auto hello_bytes = encode(hello);
  const auto abort_bytes = encode(
      CollectiveError(CollectiveErrorKind::ShapeMismatch, "rank 2: shape [3] vs [4]", {0, 2}));
  int hello_accepted = 0, abort_accepted = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    INFO("trial " << trial);
    auto h = hello_bytes, a = abort_bytes;
    for (auto* bytes : {&h, &a}) {
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e)
        (*bytes)[rng() % bytes->size()] = static_cast<std::uint8_t>(rng());
      if (rng() % 4 == 0) bytes->resize(rng() % (bytes->size() + 8));
    }
    HelloPayload hb;
    if (decode_hello_payload(h, hb).empty()) {
      ++hello_accepted;
      REQUIRE(encode(hb) == h);  // accepted means: exactly what it says
    }
    AbortPayload ab;
    if (decode_abort_payload(a, 3, ab).empty()) {
      ++abort_accepted;
      REQUIRE(encode(ab.error()) == a);
    }
  }
  REQUIRE(hello_accepted > 0);
  REQUIRE(abort_accepted > 0);
}
