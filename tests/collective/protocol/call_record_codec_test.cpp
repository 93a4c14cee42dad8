// The CallRecord wire encoding: round trips, the pinned little-endian layout, and a decoder that
// refuses every truncated or corrupted record with a reason instead of trusting it.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "collective/common/collective_error.h"
#include "collective/protocol/call_record_codec.h"
#include "tensor/core/dtype.h"

using namespace ruccl;

namespace {

CallRecord full_record() {
  CallRecord r;
  r.seq = 0x0102030405060708ull;
  r.kind = OpKind::AllToAllV;
  r.dtype = static_cast<std::uint8_t>(DType::BF16);
  r.reduce_op = 42;  // carried as given: the agreement check rejects it, not the codec
  r.has_tensor = 1;
  r.root = -1;
  r.set_shape(Shape{3, 0, 7, 1, 2, 9, 4, 5});
  r.algorithm = 3;
  r.tree_arity = 4;
  r.num_words = CallRecord::kMaxWords;
  for (int w = 0; w < r.num_words; ++w) {
    r.words[w] = -1000 * (w + 1);
    CallRecord::set_text(r.word_names[w], std::string(30, static_cast<char>('a' + w)).c_str());
  }
  CallRecord::set_text(r.label, std::string(100, 'L').c_str());
  CallRecord::set_text(r.engine, std::string(40, 'E').c_str());
  r.error_kind = static_cast<std::uint8_t>(CollectiveErrorKind::Timeout);
  CallRecord::set_text(r.error_message, std::string(300, 'm').c_str());
  return r;
}

std::vector<std::uint8_t> encode(const CallRecord& r) {
  std::vector<std::uint8_t> out;
  encode_call_record(r, out);
  return out;
}

void require_same(const CallRecord& a, const CallRecord& b) {
  REQUIRE(a.seq == b.seq);
  REQUIRE(a.kind == b.kind);
  REQUIRE(a.dtype == b.dtype);
  REQUIRE(a.reduce_op == b.reduce_op);
  REQUIRE(a.has_tensor == b.has_tensor);
  REQUIRE(a.root == b.root);
  REQUIRE(a.ndim == b.ndim);
  for (int d = 0; d < Shape::kMaxDims; ++d) REQUIRE(a.dims[d] == b.dims[d]);
  REQUIRE(a.algorithm == b.algorithm);
  REQUIRE(a.tree_arity == b.tree_arity);
  REQUIRE(a.num_words == b.num_words);
  for (int w = 0; w < a.num_words; ++w) {
    REQUIRE(a.words[w] == b.words[w]);
    REQUIRE(std::strcmp(a.word_names[w], b.word_names[w]) == 0);
  }
  REQUIRE(std::strcmp(a.label, b.label) == 0);
  REQUIRE(std::strcmp(a.engine, b.engine) == 0);
  REQUIRE(a.error_kind == b.error_kind);
  REQUIRE(std::strcmp(a.error_message, b.error_message) == 0);
}

std::string decode(const std::vector<std::uint8_t>& bytes) {
  CallRecord r;
  return decode_call_record(bytes, r);
}

}  // namespace

TEST_CASE("A CallRecord survives its wire encoding field by field", "[collective]") {
  for (const CallRecord& r : {CallRecord{}, full_record()}) {
    const auto bytes = encode(r);
    CallRecord back;
    REQUIRE(decode_call_record(bytes, back).empty());
    require_same(r, back);
  }
  REQUIRE(encode(full_record()).size() == kMaxEncodedCallRecordBytes);
}

TEST_CASE("The CallRecord encoding is little-endian with the documented layout", "[collective]") {
  CallRecord r;
  r.seq = 0x0102030405060708ull;
  r.root = -2;
  r.set_shape(Shape{5});
  const auto b = encode(r);
  REQUIRE(b[0] == 2);  // version 2, little-endian
  REQUIRE(b[1] == 0);
  REQUIRE(b[2] + 256 * b[3] == static_cast<int>(b.size()) - 4);
  for (int i = 0; i < 8; ++i) REQUIRE(b[4 + static_cast<std::size_t>(i)] == 8 - i);
  REQUIRE(b[18] == 2);                                                          // ndim + 1
  REQUIRE((b[20] == 0xFE && b[21] == 0xFF && b[22] == 0xFF && b[23] == 0xFF));  // root -2
  REQUIRE(b[28] == 5);                                                          // dims[0]
}

TEST_CASE("Every truncation of a CallRecord is refused", "[collective]") {
  const auto bytes = encode(full_record());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<std::uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    INFO(n << " of " << bytes.size() << " bytes");
    REQUIRE_FALSE(decode(cut).empty());
  }
}

TEST_CASE("A corrupted CallRecord is refused with the field named", "[collective]") {
  const auto good = encode(full_record());
  auto with = [&](std::size_t at, std::uint8_t value) {
    auto b = good;
    b[at] = value;
    return decode(b);
  };
  CHECK_THAT(with(0, 1), Catch::Contains("unsupported CallRecord version 1 (expected 2)"));
  CHECK_THAT(with(0, 3), Catch::Contains("unsupported CallRecord version 3"));
  CHECK_THAT(with(2, 3), Catch::Contains("length field"));
  CHECK_THAT(with(12, 200), Catch::Contains("kind 200"));
  CHECK_THAT(with(13, 9), Catch::Contains("dtype 9"));
  CHECK_THAT(with(15, 2), Catch::Contains("has_tensor 2"));
  CHECK_THAT(with(17, 99), Catch::Contains("error_kind 99"));
  CHECK_THAT(with(18, 10), Catch::Contains("ndim 9"));
  CHECK_THAT(with(19, 5), Catch::Contains("num_words 5"));
  CHECK_THAT(with(28 + 7, 0x80), Catch::Contains("dim 0 is negative"));
  auto trailing = good;
  trailing.push_back(0);
  trailing[2] = static_cast<std::uint8_t>(trailing.size() - 4);
  trailing[3] = static_cast<std::uint8_t>((trailing.size() - 4) >> 8);
  CHECK_THAT(decode(trailing), Catch::Contains("unexpected bytes"));
  // A string longer than its field, and one with a NUL inside.
  CallRecord small;
  CallRecord::set_text(small.label, "abc");
  auto b = encode(small);
  // The label's length byte: before "abc", the (empty) engine and the (empty) message.
  const std::size_t label_at = b.size() - 1 - 1 - 4;
  REQUIRE(b[label_at] == 3);
  auto too_long = b;
  too_long[label_at] = CallRecord::kLabelBytes;
  CHECK_FALSE(decode(too_long).empty());
  auto nul = b;
  nul[label_at + 2] = 0;
  CHECK_THAT(decode(nul), Catch::Contains("NUL"));
  auto long_engine = b;
  long_engine[b.size() - 2] = CallRecord::kEngineBytes;  // the engine's length byte
  CHECK_THAT(decode(long_engine), Catch::Contains("engine of 24 bytes is longer than 23"));
}

TEST_CASE("Random bytes never crash the CallRecord decoder", "[collective]") {
  std::mt19937 rng(5);
  const auto good = encode(full_record());
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::uint8_t> b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
    if (rng() % 8 == 0) b.resize(rng() % (b.size() + 1));
    CallRecord r;
    if (decode_call_record(b, r).empty()) {
      ++accepted;
      // Whatever was accepted is a well-formed record: it encodes back to the same bytes.
      REQUIRE(encode(r) == b);
    }
  }
  REQUIRE(accepted > 0);  // flips inside words and names are valid records
}
