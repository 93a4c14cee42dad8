// cereal serialization of Tensor and Generator: round trips for every dtype and layout, the
// byte format, and every way a stream can be wrong.
#include <catch2/catch.hpp>

#include <cereal/archives/binary.hpp>
#include <cereal/archives/portable_binary.hpp>
#include <cstring>
#include <sstream>

#include "tensor/random/generator.h"
#include "tensor/serialize/tensor_archive.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;

namespace {

template <typename OutArchive = cereal::BinaryOutputArchive>
std::string save_bytes(const Tensor& t) {
  std::ostringstream os;
  {
    OutArchive ar(os);
    ar(t);
  }
  return os.str();
}

template <typename InArchive = cereal::BinaryInputArchive>
Tensor load_bytes(const std::string& bytes) {
  std::istringstream is(bytes);
  InArchive ar(is);
  Tensor t;
  ar(t);
  return t;
}

// A version-1 header written field by field, as the format documents it.
struct Header {
  std::uint32_t version = kTensorFormatVersion;
  std::uint8_t defined = 1;
  std::uint8_t dtype = static_cast<std::uint8_t>(DType::F32);
  std::vector<std::int64_t> sizes{2};
  std::uint64_t nbytes = 8;

  std::string bytes() const {
    std::ostringstream os;
    {
      cereal::BinaryOutputArchive ar(os);
      ar(version, defined, dtype, static_cast<std::uint8_t>(sizes.size()));
      for (std::int64_t s : sizes) ar(s);
      ar(nbytes);
    }
    return os.str();
  }
};

}  // namespace

TEST_CASE("tensors of every dtype and layout survive a save/load round trip", "[tensor]") {
  const Tensor base = Tensor::from_vector<double>({0, 1.5, -2, 3, 65504, -0.25}, {2, 3});
  for (DType dtype :
       {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    INFO(dtype);
    const Tensor t = base.to(dtype);
    REQUIRE_THAT(load_bytes(save_bytes(t)), TensorEqual(t));
    // A transposed view is saved as its logical (row-major) elements.
    const Tensor loaded = load_bytes(save_bytes(t.transpose(0, 1)));
    REQUIRE(loaded.is_contiguous());
    REQUIRE_THAT(loaded, TensorEqual(t.transpose(0, 1)));
    // The portable archive carries the same data.
    REQUIRE_THAT((load_bytes<cereal::PortableBinaryInputArchive>(
                     save_bytes<cereal::PortableBinaryOutputArchive>(t))),
                 TensorEqual(t));
  }
  // 0-d, empty, broadcast and undefined tensors.
  REQUIRE_THAT(load_bytes(save_bytes(Tensor::scalar(7, DType::I64))),
               TensorEqual(Tensor::scalar(7, DType::I64)));
  REQUIRE(load_bytes(save_bytes(Tensor::zeros({0, 4}))).shape() == Shape{0, 4});
  REQUIRE_THAT(load_bytes(save_bytes(Tensor::ones({1}).expand({3, 2}))),
               TensorEqual(Tensor::ones({3, 2})));
  REQUIRE_FALSE(load_bytes(save_bytes(Tensor())).defined());
  // Large values of a 64-bit integer stay exact.
  const Tensor big = Tensor::from_vector<std::int64_t>({(std::int64_t{1} << 62) + 1}, {1});
  REQUIRE_THAT(load_bytes(save_bytes(big)), TensorEqual(big));
}

TEST_CASE("the tensor format is a version, dtype, shape, byte count and little-endian data",
          "[tensor]") {
  const Tensor t = Tensor::from_vector<std::int32_t>({1, 0x01020304}, {2});
  const std::string bytes = save_bytes(t);
  Header h;
  h.dtype = static_cast<std::uint8_t>(DType::I32);
  const std::string header = h.bytes();
  REQUIRE(bytes.size() == header.size() + 8);
  REQUIRE(bytes.substr(0, header.size()) == header);
  const std::string data = bytes.substr(header.size());
  REQUIRE(data == std::string("\x01\x00\x00\x00\x04\x03\x02\x01", 8));
}

TEST_CASE("loading a bad stream throws a typed error naming the problem", "[tensor]") {
  const std::string good = save_bytes(Tensor::from_vector<float>({1, 2}, {2}));
  SECTION("an unknown format version") {
    Header h;
    h.version = 2;
    REQUIRE_THROWS_MATCHES(load_bytes(h.bytes() + std::string(8, '\0')), SerializationError,
                           Catch::Message("Tensor load: expected format version 1, got 2"));
  }
  SECTION("an unknown dtype code") {
    Header h;
    h.dtype = 7;
    REQUIRE_THROWS_MATCHES(load_bytes(h.bytes() + std::string(8, '\0')), DTypeError,
                           Catch::Message("Tensor load: expected a dtype code below 7, got 7"));
  }
  SECTION("a bad defined flag") {
    Header h;
    h.defined = 2;
    REQUIRE_THROWS_AS(load_bytes(h.bytes()), SerializationError);
  }
  SECTION("too many dims, negative or overflowing sizes") {
    Header h;
    h.sizes = std::vector<std::int64_t>(9, 1);
    REQUIRE_THROWS_MATCHES(load_bytes(h.bytes()), ShapeError,
                           Catch::Message("Tensor load: expected at most 8 dims, got 9"));
    h.sizes = {2, -1};
    REQUIRE_THROWS_MATCHES(load_bytes(h.bytes()), ShapeError,
                           Catch::Message("Tensor load: expected non-negative sizes, got -1 at "
                                          "dim 1"));
    h.sizes = {std::int64_t{1} << 40, std::int64_t{1} << 40};
    REQUIRE_THROWS_AS(load_bytes(h.bytes()), ShapeError);
  }
  SECTION("a byte count that does not match the shape") {
    Header h;
    h.nbytes = 12;
    REQUIRE_THROWS_MATCHES(load_bytes(h.bytes() + std::string(12, '\0')), SerializationError,
                           Catch::Message("Tensor load: expected 8 bytes of data for F32 [2], got "
                                          "a header claiming 12"));
  }
  SECTION("a truncated stream, in the header or in the data") {
    for (std::size_t cut : {std::size_t{0}, std::size_t{3}, std::size_t{9}, good.size() - 1}) {
      INFO("cut at " << cut);
      REQUIRE_THROWS_AS(load_bytes(good.substr(0, cut)), SerializationError);
    }
    REQUIRE_THROWS_WITH(load_bytes(good.substr(0, good.size() - 1)),
                        Catch::StartsWith("Tensor load: expected 8 bytes of tensor data, got a "
                                          "truncated stream"));
  }
  SECTION("a huge claimed tensor with no data fails without allocating it") {
    Header h;
    h.sizes = {std::int64_t{1} << 38};  // 1 TiB of F32
    h.nbytes = std::uint64_t{1} << 40;
    REQUIRE_THROWS_AS(load_bytes(h.bytes() + std::string(100, '\0')), SerializationError);
  }
  SECTION("Bool bytes other than 0 and 1") {
    Header h;
    h.dtype = static_cast<std::uint8_t>(DType::Bool);
    h.nbytes = 2;
    REQUIRE_THROWS_MATCHES(load_bytes(h.bytes() + std::string("\x01\x02", 2)), SerializationError,
                           Catch::Message("Tensor load: expected Bool bytes of 0 or 1, got 2 at "
                                          "element 1"));
  }
}

TEST_CASE("a saved Generator continues its stream after loading", "[tensor]") {
  Generator gen(123);
  gen.next_u32();
  gen.next_normal();
  std::ostringstream os;
  {
    cereal::BinaryOutputArchive ar(os);
    ar(gen);
  }
  Generator restored;
  {
    std::istringstream is(os.str());
    cereal::BinaryInputArchive ar(is);
    ar(restored);
  }
  for (int i = 0; i < 9; ++i) REQUIRE(restored.next_normal() == gen.next_normal());
  REQUIRE(restored.next_u64() == gen.next_u64());
  std::istringstream truncated(os.str().substr(0, 10));
  cereal::BinaryInputArchive ar(truncated);
  REQUIRE_THROWS_AS(ar(restored), SerializationError);
}
