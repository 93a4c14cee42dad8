// BoundedInputArchive: reads PortableBinaryOutputArchive's bytes, and refuses counts and reads
// the remaining bytes cannot hold instead of allocating what a damaged stream claims.
#include <catch2/catch.hpp>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <cstring>
#include <map>
#include <sstream>

#include "tensor/serialize/bounded_input_archive.h"
#include "tensor/serialize/tensor_archive.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using ruccl::testing::TensorEqual;

namespace {

template <typename... Ts>
std::string portable_bytes(cereal::PortableBinaryOutputArchive::Options options, const Ts&... ts) {
  std::ostringstream os;
  {
    cereal::PortableBinaryOutputArchive ar(os, options);
    ar(ts...);
  }
  return os.str();
}

}  // namespace

TEST_CASE("BoundedInputArchive reads what PortableBinaryOutputArchive wrote, in either byte order",
          "[tensor][serialize]") {
  const std::string text = "ring all-reduce";
  const std::vector<double> values = {1.5, -2.25, 1e300};
  const std::map<std::string, std::int64_t> counts = {{"a", -7}, {"bb", 1LL << 40}};
  const Tensor t = Tensor::arange(0, 12, 1, DType::F32).reshape({3, 4}).transpose(0, 1);
  for (auto options : {cereal::PortableBinaryOutputArchive::Options::LittleEndian(),
                       cereal::PortableBinaryOutputArchive::Options::BigEndian()}) {
    const std::string bytes = portable_bytes(options, text, values, counts, t);
    BoundedInputArchive ar(bytes);
    std::string text2;
    std::vector<double> values2;
    std::map<std::string, std::int64_t> counts2;
    Tensor t2;
    ar(text2, values2, counts2, t2);
    CHECK(text2 == text);
    CHECK(values2 == values);
    CHECK(counts2 == counts);
    CHECK_THAT(t2, TensorEqual(t.contiguous()));
    CHECK(ar.remaining() == 0);
  }
}

TEST_CASE("BoundedInputArchive refuses a count or a read the remaining bytes cannot hold",
          "[tensor][serialize]") {
  const auto little = cereal::PortableBinaryOutputArchive::Options::LittleEndian();
  // Eight bytes of text where a string's length belongs: a count of ~8e18.
  std::string bytes = std::string(1, '\1') + "not a record";
  {
    BoundedInputArchive ar(bytes);
    std::string s;
    CHECK_THROWS_WITH(ar(s), Catch::Contains("claims") && Catch::Contains("bytes remain"));
  }
  // A vector of 1000 doubles cut short: the count fits the bytes, the data does not.
  const std::string full = portable_bytes(little, std::vector<double>(1000, 1.0));
  for (std::size_t cut : {full.size() - 1, full.size() / 2, std::size_t{9}}) {
    BoundedInputArchive ar(std::string_view(full).substr(0, cut));
    std::vector<double> v;
    CHECK_THROWS_AS(ar(v), cereal::Exception);
  }
  // No byte-order flag at all, and a flag that is neither 0 nor 1.
  CHECK_THROWS_WITH(BoundedInputArchive(std::string_view()),
                    Catch::Contains("expected 1 more bytes, only 0 remain"));
  CHECK_THROWS_WITH(BoundedInputArchive(std::string_view("\x07", 1)),
                    Catch::Contains("byte-order flag of 0 or 1, got 7"));
  // Trailing bytes are the caller's to judge.
  const std::string two = portable_bytes(little, std::int32_t{5}, std::int32_t{6});
  BoundedInputArchive ar(two);
  std::int32_t first = 0;
  ar(first);
  CHECK(first == 5);
  CHECK(ar.remaining() == 4);
}

TEST_CASE("BoundedInputArchive refuses a bool byte other than 0 or 1", "[tensor][serialize]") {
  const auto little = cereal::PortableBinaryOutputArchive::Options::LittleEndian();
  std::string bytes = portable_bytes(little, true, false);
  {
    BoundedInputArchive ar(bytes);
    bool a = false;
    bool b = true;
    ar(a, b);
    CHECK(a);
    CHECK(!b);
  }
  bytes[1] = '\x02';  // the first bool, after the byte-order flag
  BoundedInputArchive ar(bytes);
  bool a = false;
  CHECK_THROWS_WITH(ar(a), Catch::Contains("expected a bool byte of 0 or 1, got 2"));
}
