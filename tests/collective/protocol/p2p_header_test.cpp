// The point-to-point tensor header: a fixed little-endian layout that round-trips every dtype and
// rank, and a decoder that refuses each malformed field by name before anything is sized from it.
#include <catch2/catch.hpp>

#include "collective/protocol/p2p_header.h"

using namespace ruccl;

namespace {

std::string decode(const P2PHeaderBytes& bytes) {
  DType dtype{};
  Shape shape;
  return decode_p2p_header(bytes, dtype, shape);
}

void put_dim(P2PHeaderBytes& bytes, int d, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) bytes[8 + 8 * d + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

TEST_CASE("p2p headers round-trip every dtype and rank in a fixed little-endian layout",
          "[collective]") {
  const P2PHeaderBytes h = encode_p2p_header(DType::F32, Shape{3, 258});
  CHECK(h[0] == kP2PHeaderVersion);
  CHECK(h[1] == static_cast<std::uint8_t>(DType::F32));
  CHECK(h[2] == 2);
  CHECK(h[8] == 3);
  CHECK(h[16] == 2);  // 258 = 0x0102, low byte first
  CHECK(h[17] == 1);
  for (DType dtype :
       {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{7}, Shape{1, 2, 3, 4, 5, 6, 7, 8}}) {
      DType d{};
      Shape s;
      REQUIRE(decode_p2p_header(encode_p2p_header(dtype, shape), d, s).empty());
      CHECK(d == dtype);
      CHECK(s == shape);
    }
  }
}

TEST_CASE("a malformed p2p header is refused naming the field", "[collective]") {
  const P2PHeaderBytes good = encode_p2p_header(DType::F64, Shape{2, 3});
  P2PHeaderBytes h = good;
  h[0] = 3;
  CHECK(decode(h) == "version 3 (expected 1)");
  h = good;
  h[1] = 9;
  CHECK(decode(h) == "dtype 9 is no DType");
  h = good;
  h[2] = 12;
  CHECK(decode(h) == "ndim 12 out of range [0, 8]");
  h = good;
  h[5] = 1;
  CHECK(decode(h) == "reserved byte 5 is 1 (expected 0)");
  h = good;
  put_dim(h, 1, static_cast<std::uint64_t>(-4));
  CHECK(decode(h) == "dim 1 is -4");
  h = good;
  put_dim(h, 4, 1);
  CHECK(decode(h) == "dim 4 past ndim 2 is 1 (expected 0)");
  h = good;
  put_dim(h, 0, std::uint64_t{1} << 40);
  put_dim(h, 1, std::uint64_t{1} << 40);
  CHECK(decode(h) == "the tensor's element count overflows");
  h = good;
  put_dim(h, 0, std::uint64_t{1} << 31);
  put_dim(h, 1, std::uint64_t{1} << 31);  // 2^62 elements of 8 bytes
  CHECK(decode(h) == "the tensor's byte size overflows");
}
