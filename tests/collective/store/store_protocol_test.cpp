// The TCP store's wire protocol: round trips of every op, the pinned little-endian layout, and
// decoders that refuse every truncated, oversized or corrupted request or reply with a reason.
// Also replays the fuzzer's committed seed corpus (fuzz/corpus/store_request).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "collective/store/store_protocol.h"
#include "tests/support/test_data_dir.h"

using namespace ruccl;

namespace {

const std::filesystem::path kCorpus = std::filesystem::path(ruccl::testing::test_data_dir()) /
                                      ".." / ".." / "fuzz" / "corpus" / "store_request";

SessionId counting_session() {
  SessionId s{};
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint8_t>(0xE0 + i);
  return s;
}

StoreRequest request_of(StoreOp op) {
  StoreRequest r;
  r.header.op = op;
  r.header.session = counting_session();
  r.header.request_id = 0x1122334455667788ull;
  switch (op) {
    case StoreOp::Hello:
      break;
    case StoreOp::Set:
      r.key = "rank/3/addr";
      r.value = {1, 2, 3, 0, 255};
      break;
    case StoreOp::Get:
      r.key = "rank/3/addr";
      r.header.timeout_ms = 30000;
      break;
    case StoreOp::Wait:
      r.header.timeout_ms = 5;
      r.keys = {"a", std::string(kMaxStoreKeyBytes, 'k'), "c"};
      break;
    case StoreOp::Add:
      r.key = "counter";
      r.delta = -42;
      break;
    case StoreOp::CompareSet:
      r.key = "leader";
      r.expected = {'o', 'l', 'd'};
      r.value = {'n', 'e', 'w', '!'};
      break;
    case StoreOp::Remove:
      r.key = "gone";
      break;
    case StoreOp::Check:
      r.keys = {"x"};
      break;
  }
  return r;
}

const StoreOp kOps[] = {StoreOp::Hello, StoreOp::Set,        StoreOp::Get,    StoreOp::Wait,
                        StoreOp::Add,   StoreOp::CompareSet, StoreOp::Remove, StoreOp::Check};

std::vector<std::uint8_t> encode(const StoreRequest& r) {
  std::vector<std::uint8_t> out;
  encode_store_request(r, out);
  return out;
}

void check_same(const StoreRequest& a, const StoreRequest& b) {
  CHECK(a.header.op == b.header.op);
  CHECK(a.header.session == b.header.session);
  CHECK(a.header.request_id == b.header.request_id);
  CHECK(a.header.timeout_ms == b.header.timeout_ms);
  CHECK(a.key == b.key);
  CHECK(a.value == b.value);
  CHECK(a.expected == b.expected);
  CHECK(a.delta == b.delta);
  CHECK(a.keys == b.keys);
}

void put_u32(std::vector<std::uint8_t>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::string decode_error(const std::vector<std::uint8_t>& bytes) {
  StoreRequest r;
  return decode_store_request(bytes, r);
}

}  // namespace

TEST_CASE("every store request survives an encode and decode round trip", "[collective][store]") {
  for (const StoreOp op : kOps) {
    INFO(store_op_name(op));
    const StoreRequest r = request_of(op);
    StoreRequest back;
    REQUIRE(decode_store_request(encode(r), back) == "");
    check_same(r, back);
  }
}

TEST_CASE("the store request layout is pinned little-endian field by field",
          "[collective][store]") {
  const std::vector<std::uint8_t> b = encode(request_of(StoreOp::Get));
  REQUIRE(b.size() == kStoreRequestHeaderBytes + 11);
  const std::vector<std::uint8_t> head(b.begin(), b.begin() + 48);
  const std::vector<std::uint8_t> want = {
      'R',  'C',  'S',  'Q',  1,    0,    3,    0,                             // magic version op
      0xE0, 0xE1, 0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xEB,  // session
      0xEC, 0xED, 0xEE, 0xEF,                                                  //
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,                          // request id
      0x30, 0x75, 0,    0,                                                     // timeout 30000
      11,   0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0};    // key value extra
  CHECK(head == want);
  CHECK(std::string(b.begin() + 48, b.end()) == "rank/3/addr");

  StoreReply reply;
  reply.header.status = StoreStatus::Timeout;
  reply.header.request_id = 7;
  reply.value = {9, 8};
  std::vector<std::uint8_t> rb;
  encode_store_reply(reply, rb);
  const std::vector<std::uint8_t> want_reply = {'R', 'C', 'S', 'R', 1, 0, 1, 0, 7, 0, 0,
                                                0,   0,   0,   0,   0, 2, 0, 0, 0, 9, 8};
  CHECK(rb == want_reply);
}

TEST_CASE("every truncation and every overlong copy of a request is refused",
          "[collective][store]") {
  for (const StoreOp op : kOps) {
    INFO(store_op_name(op));
    const std::vector<std::uint8_t> b = encode(request_of(op));
    for (std::size_t n = 0; n < b.size(); ++n) {
      INFO("length " << n);
      const std::string e = decode_error(
          std::vector<std::uint8_t>(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)));
      CHECK_THAT(e, Catch::Contains("truncated"));
    }
    std::vector<std::uint8_t> longer = b;
    longer.push_back(0);
    CHECK_THAT(decode_error(longer), Catch::Contains("oversized"));
  }
}

TEST_CASE("a corrupted request header is refused saying which field is wrong",
          "[collective][store]") {
  const std::vector<std::uint8_t> good = encode(request_of(StoreOp::Get));
  const auto with = [&](std::size_t at, std::uint8_t v) {
    std::vector<std::uint8_t> b = good;
    b[at] = v;
    return decode_error(b);
  };
  CHECK_THAT(with(0, 'X'), Catch::Contains("not a store request"));
  CHECK_THAT(with(4, 2), Catch::Contains("unsupported store protocol version 2 (expected 1)"));
  CHECK_THAT(with(6, 0), Catch::Contains("unknown store op 0"));
  CHECK_THAT(with(6, 9), Catch::Contains("unknown store op 9"));
  CHECK_THAT(with(7, 1), Catch::Contains("reserved byte"));
  const auto with_u32 = [&](std::size_t at, std::uint32_t v) {
    std::vector<std::uint8_t> b = good;
    put_u32(b, at, v);
    StoreRequestHeader h;
    return decode_store_request_header(b, h);
  };
  CHECK_THAT(with_u32(36, kMaxStoreKeyBytes + 1),
             Catch::Contains("key length 4097 over the cap of 4096"));
  CHECK_THAT(with_u32(36, 0), Catch::Contains("expected a key"));
  CHECK_THAT(with_u32(40, 0xFFFFFFFFu), Catch::Contains("over the cap of 67108864"));
  CHECK_THAT(with_u32(44, 1), Catch::Contains("expected no extra bytes"));
  CHECK_THAT(with_u32(40, 3), Catch::Contains("expected no value"));

  std::vector<std::uint8_t> add = encode(request_of(StoreOp::Add));
  put_u32(add, 32, 10);
  CHECK_THAT(decode_error(add), Catch::Contains("expected a timeout of 0"));
  std::vector<std::uint8_t> cs = encode(request_of(StoreOp::CompareSet));
  put_u32(cs, 44, kMaxStoreValueBytes + 1);
  CHECK_THAT(decode_error(cs), Catch::Contains("extra length 67108865 over the cap"));
  std::vector<std::uint8_t> check = encode(request_of(StoreOp::Check));
  put_u32(check, 48, 0);  // a key of length 0 in the list
  CHECK_THAT(decode_error(check), Catch::Contains("has length 0"));
}

TEST_CASE("replies round trip and corrupted or truncated ones are refused", "[collective][store]") {
  StoreReply r;
  r.header.status = StoreStatus::InvalidArgument;
  r.header.request_id = 99;
  r.value = {'n', 'o'};
  std::vector<std::uint8_t> b;
  encode_store_reply(r, b);
  StoreReply back;
  REQUIRE(decode_store_reply(b, back) == "");
  CHECK(back.header.status == r.header.status);
  CHECK(back.header.request_id == 99);
  CHECK(back.value == r.value);
  for (std::size_t n = 0; n < b.size(); ++n)
    CHECK_THAT(decode_store_reply(std::span(b.data(), n), back), Catch::Contains("truncated"));
  std::vector<std::uint8_t> bad = b;
  bad[6] = 3;
  CHECK_THAT(decode_store_reply(bad, back), Catch::Contains("unknown store reply status 3"));
  bad = b;
  put_u32(bad, 16, kMaxStoreValueBytes + 1);
  CHECK_THAT(decode_store_reply(bad, back), Catch::Contains("over the cap"));
}

TEST_CASE("random mutations of requests never crash and what decodes re-encodes identically",
          "[collective][store]") {
  std::mt19937 rng(12);
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::uint8_t> b = encode(request_of(kOps[i % 8]));
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
    if (rng() % 4 == 0) b.resize(rng() % (b.size() + 1));
    StoreRequest r;
    if (!decode_store_request(b, r).empty()) continue;
    ++decoded;
    REQUIRE(encode(r) == b);
  }
  CHECK(decoded > 0);
}

TEST_CASE("the store fuzzer's seed corpus decodes as its file names say", "[collective][store]") {
  REQUIRE(std::filesystem::is_directory(kCorpus));
  int valid = 0, invalid = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kCorpus)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::vector<std::uint8_t> b((std::istreambuf_iterator<char>(in)), {});
    const std::string name = entry.path().filename().string();
    INFO(name);
    StoreRequest r;
    StoreReply reply;
    const std::string e =
        name.starts_with("reply-") ? decode_store_reply(b, reply) : decode_store_request(b, r);
    if (name.find("valid-") == 0 || name.starts_with("reply-")) {
      CHECK(e == "");
      ++valid;
    } else {
      CHECK(e != "");
      ++invalid;
    }
  }
  CHECK(valid >= 8);
  CHECK(invalid >= 3);
}

// Writes the seed corpus (run by hand: ruccl_collective_tests "[.generate-store-corpus]").
TEST_CASE("the store fuzzer seed corpus is written", "[.generate-store-corpus]") {
  std::filesystem::create_directories(kCorpus);
  const auto write = [](const std::string& name, const std::vector<std::uint8_t>& b) {
    std::ofstream(kCorpus / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  };
  for (const StoreOp op : kOps)
    write(std::string("valid-") + store_op_name(op), encode(request_of(op)));
  StoreReply reply;
  reply.header.request_id = 3;
  reply.value = {'v'};
  std::vector<std::uint8_t> rb;
  encode_store_reply(reply, rb);
  write("reply-ok", rb);
  std::vector<std::uint8_t> garbage(64);
  for (std::size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = static_cast<std::uint8_t>(i * 91 + 5);
  write("garbage-bytes", garbage);
  std::vector<std::uint8_t> huge = encode(request_of(StoreOp::Set));
  put_u32(huge, 40, 0xFFFFFFFFu);
  write("huge-value-length", huge);
  std::vector<std::uint8_t> cut = encode(request_of(StoreOp::Wait));
  cut.resize(cut.size() - 3);
  write("truncated-wait", cut);
}
