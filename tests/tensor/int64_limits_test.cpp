// Sizes, strides, offsets and byte counts at the int64 limits: every view and creation op either
// gives the exact result or a typed error naming the op and the numbers, never a wrapped value (a
// garbage view, a NULL data pointer, a crash later).
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tensor/backend/backend.h"
#include "tensor/core/sanitizers.h"
#include "tensor/random/generator.h"
#include "tensor/tensor.h"

// The allocation tests ask for more bytes than any machine has. AddressSanitizer and
// ThreadSanitizer abort on such a request unless their allocator may return null, as libc's does.
#if RUCCL_ASAN
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
#endif
#if RUCCL_TSAN
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
#endif

using namespace ruccl;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t k2p32 = std::int64_t{1} << 32;
constexpr std::int64_t k2p62 = std::int64_t{1} << 62;

std::vector<std::int64_t> ints(const Tensor& t) { return t.to_vector<std::int64_t>(); }

// An exception whose message contains `part` (Catch::Message matches the whole message).
class MessageContains : public Catch::MatcherBase<std::exception> {
 public:
  explicit MessageContains(std::string part) : part_(std::move(part)) {}
  bool match(const std::exception& e) const override {
    return std::string(e.what()).find(part_) != std::string::npos;
  }
  std::string describe() const override { return "message contains \"" + part_ + "\""; }

 private:
  std::string part_;
};

}  // namespace

TEST_CASE("narrow rejects a start and length whose sum overflows int64", "[tensor]") {
  const Tensor x = Tensor::arange(0, 4);
  REQUIRE_THROWS_MATCHES(x.narrow(0, kMax, 2), IndexError,
                         Catch::Message("Tensor::narrow: expected 0 <= start, 0 <= length and "
                                        "start + length <= size 4 of dim 0, got start "
                                        "9223372036854775807 and length 2 (start + length "
                                        "overflows int64)"));
  REQUIRE_THROWS_MATCHES(x.narrow(0, 1, kMax), IndexError,
                         Catch::Message("Tensor::narrow: expected 0 <= start, 0 <= length and "
                                        "start + length <= size 4 of dim 0, got start 1 and "
                                        "length 9223372036854775807 (start + length overflows "
                                        "int64)"));
  REQUIRE_THROWS_AS(x.narrow(0, -1, kMax), IndexError);  // start 3 from the end, then overflow
  REQUIRE_THROWS_AS(x.narrow(0, 0, kMax), IndexError);
  REQUIRE_THROWS_AS(x.narrow(0, kMin, 1), IndexError);
  REQUIRE_THROWS_AS(x.narrow(0, 2, kMin), IndexError);
  REQUIRE_THROWS_AS(x.narrow(kMax, 0, 1), IndexError);
  REQUIRE_THROWS_MATCHES(Tensor::scalar(1.0).narrow(0, 0, 1), IndexError,
                         Catch::Message("Tensor::narrow: expected a tensor with at least 1 dim, "
                                        "got a 0-d tensor"));
  REQUIRE_THROWS_AS(Tensor::scalar(1.0).select(0, 0), IndexError);
  REQUIRE_THROWS_AS(Tensor().narrow(0, 0, 1), IndexError);
  // The limits that are valid.
  REQUIRE(x.narrow(0, 4, 0).numel() == 0);
  REQUIRE(ints(x.narrow(0, -4, 4)) == std::vector<std::int64_t>{0, 1, 2, 3});
  REQUIRE(ints(x.narrow(0, -1, 1)) == std::vector<std::int64_t>{3});
  // Empty narrows start where torch's do, unless that is past the storage (the end of a sparse
  // view): then they keep the view's offset.
  REQUIRE(x.narrow(0, 4, 0).offset() == 4);
  REQUIRE(x.narrow(0, 2, 0).offset() == 2);
  const Tensor sparse = x.as_strided({2}, {3}, 0);
  REQUIRE(sparse.narrow(0, 2, 0).offset() == 0);
  REQUIRE(sparse.narrow(0, 2, 0).as_strided({0}, {1}, 4).numel() == 0);
  REQUIRE(ints(x) == std::vector<std::int64_t>{0, 1, 2, 3});
}

TEST_CASE(
    "select, transpose, permute, squeeze, unsqueeze and flatten reject dims and indices at "
    "the int64 limits",
    "[tensor]") {
  const Tensor x = Tensor::arange(0, 6).reshape({2, 3});
  REQUIRE_THROWS_MATCHES(x.select(1, kMax), IndexError,
                         Catch::Message("Tensor::select: expected an index in [-3, 3) on dim 1 of "
                                        "size 3, got 9223372036854775807"));
  REQUIRE_THROWS_AS(x.select(1, kMin), IndexError);
  REQUIRE(ints(x.select(1, -3)) == std::vector<std::int64_t>{0, 3});
  REQUIRE_THROWS_AS(x.transpose(kMax, 0), IndexError);
  REQUIRE_THROWS_AS(x.transpose(0, kMin), IndexError);
  REQUIRE_THROWS_AS(x.permute({kMin, 0}), IndexError);
  REQUIRE_THROWS_AS(x.squeeze(kMax), IndexError);
  REQUIRE_THROWS_AS(x.unsqueeze(kMax), IndexError);
  REQUIRE_THROWS_AS(x.unsqueeze(kMin), IndexError);
  REQUIRE_THROWS_AS(x.flatten(kMin, 1), IndexError);
  REQUIRE_THROWS_AS(x.size(kMin), IndexError);
}

TEST_CASE("as_strided rejects views whose extent, stride or offset leaves the storage or int64",
          "[tensor]") {
  const Tensor x = Tensor::zeros({4});
  // (size - 1) * stride = 2^64 used to wrap to 0 in the bounds check, and the view read past
  // the buffer.
  REQUIRE_THROWS_MATCHES(x.as_strided({k2p62 + 1}, {4}, 0), IndexError,
                         Catch::Message("Tensor::as_strided: view [4611686018427387905] with "
                                        "strides [4] at offset 0 reaches outside its storage of "
                                        "4 elements (its last element's index overflows int64)"));
  REQUIRE_THROWS_AS(x.as_strided({2}, {kMax / 4}, 0), IndexError);
  const Tensor bytes = Tensor::zeros({4}, DType::Bool);
  REQUIRE_THROWS_AS(bytes.as_strided({2, 2}, {k2p62, k2p62}, 0), IndexError);  // the sum wraps
  // An offset beyond the buffer, even for a view without elements.
  REQUIRE_THROWS_MATCHES(x.as_strided({2}, {1}, kMax), IndexError,
                         Catch::Message("Tensor::as_strided: expected a storage offset in [0, 4] "
                                        "(the storage's elements), got 9223372036854775807"));
  REQUIRE_THROWS_AS(x.as_strided({0}, {1}, 5), IndexError);
  REQUIRE_THROWS_AS(x.as_strided({2}, {1}, kMin), IndexError);
  // Negative sizes and strides, and strides whose byte distance overflows int64.
  REQUIRE_THROWS_AS(x.as_strided({-1}, {1}, 0), ShapeError);
  REQUIRE_THROWS_MATCHES(x.as_strided({2}, {-1}, 1), ShapeError,
                         Catch::Message("Tensor::as_strided: expected non-negative strides whose "
                                        "byte distance fits int64, got strides [-1] (dim 0, 4 "
                                        "bytes per element)"));
  REQUIRE_THROWS_AS(x.as_strided({1}, {kMax}, 0), ShapeError);
  REQUIRE_THROWS_AS(x.as_strided({1}, {kMin}, 0), ShapeError);
  // The limits that are valid: an empty view at the very end, a free stride on a size-1 dim.
  REQUIRE(x.as_strided({0}, {1}, 4).numel() == 0);
  REQUIRE(x.as_strided({0, kMax}, {kMax / 4, 1}, 4).numel() == 0);
  const Tensor row = Tensor::arange(0, 4).as_strided({1, 4}, {kMax / 8, 1}, 0);
  REQUIRE(ints(row.flatten()) == std::vector<std::int64_t>{0, 1, 2, 3});
  REQUIRE(ints(row.unsqueeze(1).flatten()) == std::vector<std::int64_t>{0, 1, 2, 3});
  REQUIRE(ints(row.transpose(0, 1).contiguous().flatten()) ==
          std::vector<std::int64_t>{0, 1, 2, 3});
}

TEST_CASE("the Tensor constructor checks a storage's geometry as as_strided does", "[tensor]") {
  const std::shared_ptr<Storage> storage = Tensor::zeros({4}).storage();
  REQUIRE(Tensor(storage, {2, 2}, {2, 1}, 0, DType::F32).numel() == 4);
  REQUIRE_THROWS_MATCHES(Tensor(storage, {5}, {1}, 0, DType::F32), IndexError,
                         Catch::Message("Tensor: view [5] with strides [1] at offset 0 reaches "
                                        "outside its storage of 4 elements"));
  REQUIRE(Tensor(storage, {2}, {1}, 0, DType::F64).numel() == 2);  // 16 bytes as F64
  REQUIRE_THROWS_AS(Tensor(storage, {3}, {1}, 0, DType::F64), IndexError);
  REQUIRE_THROWS_AS(Tensor(storage, {2}, {1}, 5, DType::F32), IndexError);
  REQUIRE_THROWS_AS(Tensor(storage, {k2p62 + 1}, {4}, 0, DType::F32), IndexError);
  REQUIRE_THROWS_AS(Tensor(storage, {2}, {1, 1}, 0, DType::F32), ShapeError);
  REQUIRE_THROWS_AS(Tensor(nullptr, {2}, {1}, 0, DType::F32), ValueError);
}

TEST_CASE("Shape numel and contiguous strides are exact or throw at the int64 limits", "[tensor]") {
  REQUIRE(Shape{kMax}.numel() == kMax);
  REQUIRE(Shape{kMax, 1, 1}.numel() == kMax);
  REQUIRE_THROWS_MATCHES(Shape({kMax, 2}).numel(), ShapeError,
                         Catch::Message("Shape: element count of [9223372036854775807, 2] "
                                        "overflows int64"));
  REQUIRE_THROWS_AS(Shape({k2p32, k2p32}).numel(), ShapeError);  // wraps to exactly 0
  REQUIRE_THROWS_AS(Shape({kMin}).numel(), ShapeError);
  REQUIRE_THROWS_MATCHES(Shape({2, kMin}).numel("myop"), ShapeError,
                         Catch::Message("myop: expected non-negative sizes, got [2, "
                                        "-9223372036854775808]"));
  REQUIRE(Shape({k2p32, k2p32, 0}).numel() == 0);  // a zero size wins over the overflow
  // Strides: the outer ones of a shape without elements may not fit int64; they are 0 there.
  REQUIRE(Shape({0, 3, k2p62}).contiguous_strides() == Shape({0, k2p62, 1}));
  REQUIRE(Shape({0, 3, k2p62}).contiguous_strides("op", 4) == Shape({0, 0, 1}));
  REQUIRE_THROWS_AS(Shape({3, k2p62}).contiguous_strides("op", 4), ShapeError);
  REQUIRE(Shape({k2p62, 2, 0}).contiguous_strides() == Shape({2, 1, 1}));
  REQUIRE_THROWS_AS(Shape({3, k2p62}).contiguous_strides(), ShapeError);
  const Tensor none = Tensor::empty({0, 3, k2p62});
  REQUIRE(none.numel() == 0);
  REQUIRE(none.strides() == Shape({0, 0, 1}));  // 2^62 floats are more bytes than int64 holds
  REQUIRE(Tensor::empty({0, 3, k2p62}, DType::Bool).strides() == Shape({0, k2p62, 1}));
  REQUIRE(none.clone().shape() == none.shape());
  REQUIRE(none.reshape({k2p62, 0, 3}).numel() == 0);
}

TEST_CASE("empty, zeros, ones, full and the random creators reject byte sizes over int64",
          "[tensor]") {
  // 2^64 - 4 bytes used to round to 0 in the allocator: a NULL data pointer, zeros segfaulted.
  REQUIRE_THROWS_MATCHES(Tensor::empty({k2p62 - 1}), ShapeError,
                         Catch::Message("Tensor::empty: expected a byte size that fits int64, got "
                                        "[4611686018427387903] of F32 (4611686018427387903 "
                                        "elements of 4 bytes)"));
  REQUIRE_THROWS_MATCHES(Tensor::zeros({k2p62 - 1}), ShapeError,
                         MessageContains("Tensor::zeros: expected a byte size that fits int64"));
  REQUIRE_THROWS_AS(Tensor::ones({2, k2p62}, DType::I32), ShapeError);
  REQUIRE_THROWS_AS(Tensor::full({k2p62 / 2}, 1.0, DType::F64), ShapeError);
  REQUIRE_THROWS_AS(Tensor::empty({kMax}, DType::F16), ShapeError);
  REQUIRE_THROWS_MATCHES(Tensor::zeros({kMax, 2}), ShapeError,
                         Catch::Message("Tensor::zeros: element count of [9223372036854775807, 2] "
                                        "overflows int64"));
  REQUIRE_THROWS_MATCHES(Tensor::ones({3, kMin}), ShapeError,
                         Catch::Message("Tensor::ones: expected non-negative sizes, got [3, "
                                        "-9223372036854775808]"));
  Generator gen(1);
  REQUIRE_THROWS_MATCHES(Tensor::rand({k2p62}, gen), ShapeError,
                         MessageContains("Tensor::rand: expected a byte size that fits int64"));
  REQUIRE_THROWS_MATCHES(Tensor::randn({k2p62}, gen), ShapeError,
                         MessageContains("Tensor::randn: expected a byte size that fits int64"));
  REQUIRE_THROWS_MATCHES(Tensor::randperm(kMax, gen), ShapeError,
                         MessageContains("Tensor::randperm: expected a byte size that fits int64"));
  REQUIRE_THROWS_MATCHES(Tensor::arange(0, kMax), ShapeError,
                         MessageContains("Tensor::arange: expected a byte size that fits int64"));
  REQUIRE_THROWS_AS(Tensor::arange(kMin, kMax), ShapeError);  // 2^64 - 1 elements
  REQUIRE(Tensor::empty({kMax, 0}).numel() == 0);
  REQUIRE_THROWS_MATCHES(Tensor::from_vector<float>({1}, {kMax, 2}), ShapeError,
                         Catch::Message("Tensor::from_vector: element count of "
                                        "[9223372036854775807, 2] overflows int64"));
  REQUIRE_THROWS_AS(Tensor::from_vector<float>({1}, {kMin}), ShapeError);
  REQUIRE(Tensor::from_vector<float>({}, {kMax, 0}).numel() == 0);
}

TEST_CASE("an allocation the system cannot satisfy throws OutOfMemoryError naming the bytes",
          "[tensor]") {
  // Valid sizes (the bytes fit int64) that no machine has: never NULL data, never a crash.
  REQUIRE_THROWS_MATCHES(Tensor::empty({std::int64_t{1} << 60}), OutOfMemoryError,
                         MessageContains("Tensor::empty: cannot allocate [1152921504606846976] "
                                         "of F32 (4611686018427387904 bytes) on cpu: "
                                         "CpuBackend::allocate: out of memory"));
  REQUIRE_THROWS_MATCHES(Tensor::full({kMax}, true, DType::Bool), OutOfMemoryError,
                         MessageContains("Tensor::full: cannot allocate [9223372036854775807] of "
                                         "Bool (9223372036854775807 bytes)"));
  // The backend itself: a size next to SIZE_MAX used to round up to 0 bytes and "succeed".
  Backend& cpu = backend_for(Device::cpu());
  const std::size_t size_max = std::numeric_limits<std::size_t>::max();
  REQUIRE_THROWS_MATCHES(cpu.allocate(size_max, Device::cpu()), OutOfMemoryError,
                         Catch::Message("CpuBackend::allocate: out of memory: the system could not "
                                        "provide 18446744073709551615 bytes (no block can be that "
                                        "large)"));
  REQUIRE_THROWS_AS(cpu.allocate(size_max - 100, Device::cpu()), OutOfMemoryError);
  REQUIRE_THROWS_AS(cpu.allocate(size_max / 2, Device::cpu()), OutOfMemoryError);
  REQUIRE_THROWS_AS(cpu.allocate(std::size_t{1} << 62, Device::cpu()), OutOfMemoryError);
  // ...and the allocator still works afterwards.
  REQUIRE(sum(Tensor::ones({1 << 20})).item<float>() == static_cast<float>(1 << 20));
}

TEST_CASE("expand, view, reshape and flatten check element counts at the int64 limits",
          "[tensor]") {
  const Tensor one = Tensor::ones({1, 1});
  const Tensor wide = one.expand({kMax, 1});  // a view: no memory of its own
  REQUIRE(wide.numel() == kMax);
  REQUIRE(wide.strides() == Shape({0, 1}));
  REQUIRE_THROWS_MATCHES(one.expand({k2p32, k2p32}), ShapeError,
                         Catch::Message("Tensor::expand: element count of [4294967296, "
                                        "4294967296] overflows int64"));
  REQUIRE_THROWS_MATCHES(one.expand({-2, 1}), ShapeError,
                         Catch::Message("Tensor::expand: expected sizes >= 0 or -1, got [-2, 1]"));
  REQUIRE_THROWS_AS(one.expand({kMin, 1}), ShapeError);
  // Its bytes do not fit: every copy of it is a clear error, not a wrapped size.
  REQUIRE_THROWS_AS(wide.nbytes(), ShapeError);
  REQUIRE_THROWS_MATCHES(wide.clone(), ShapeError,
                         MessageContains("Tensor::clone: expected a byte size that fits int64"));
  REQUIRE_THROWS_AS(wide.to_vector<float>(), ShapeError);
  REQUIRE_THROWS_AS(wide.to(DType::F64), ShapeError);
  REQUIRE_THROWS_MATCHES(exp(wide), ShapeError,
                         MessageContains("exp: expected a byte size that fits int64"));
  // Two broadcastable views whose broadcast does not fit.
  const Tensor tall = one.expand({k2p32, 1});
  REQUIRE_THROWS_MATCHES(add(tall, tall.transpose(0, 1)), ShapeError,
                         Catch::Message("add: element count of [4294967296, 4294967296] "
                                        "overflows int64"));
  REQUIRE_THROWS_AS(matmul(one.expand({k2p32, 1, 1}), one.expand({1, 1, k2p32})), ShapeError);

  const Tensor x = Tensor::zeros({4});
  REQUIRE_THROWS_MATCHES(x.reshape({kMax, 2}), ShapeError,
                         Catch::Message("Tensor::reshape: element count of [9223372036854775807, "
                                        "2] overflows int64"));
  REQUIRE_THROWS_MATCHES(x.view({k2p32, k2p32, -1}), ShapeError,
                         Catch::Message("Tensor::view: cannot infer the -1 in [4294967296, "
                                        "4294967296, -1] for 4 elements of shape [4] (the other "
                                        "sizes multiply past int64)"));
  REQUIRE_THROWS_AS(x.reshape({kMax, -1}), ShapeError);
  REQUIRE_THROWS_AS(x.reshape({kMin}), ShapeError);
  REQUIRE(x.reshape({-1, 1}).shape() == Shape({4, 1}));
  // Reshapes of a tensor without elements: any sizes, as long as one is 0.
  const Tensor none = Tensor::zeros({0});
  REQUIRE(none.reshape({k2p32, k2p32, 0}).numel() == 0);
  REQUIRE(none.view({0, 3, k2p62}).strides() == Shape({0, 0, 1}));
  REQUIRE_THROWS_AS(none.reshape({k2p32, k2p32}), ShapeError);
  // flatten of dims whose sizes overflow, hidden by a zero outside them.
  const Tensor hidden = Tensor::zeros({0, k2p32, k2p32});
  REQUIRE_THROWS_MATCHES(hidden.flatten(1, 2), ShapeError,
                         Catch::Message("Tensor::flatten: element count of [4294967296, "
                                        "4294967296] overflows int64"));
  REQUIRE(hidden.flatten(0, 1).shape() == Shape({0, k2p32}));
  REQUIRE(hidden.flatten().numel() == 0);
}

TEST_CASE("split, chunk and cat compute sizes and offsets without overflowing int64", "[tensor]") {
  const Tensor huge = Tensor::zeros({1}, DType::Bool).expand({kMax});
  // split_size near the limit: start + split_size used to wrap negative.
  const std::vector<Tensor> two = split(huge, kMax - 1);
  REQUIRE(two.size() == 2);
  REQUIRE(two[0].size(0) == kMax - 1);
  REQUIRE(two[1].size(0) == 1);
  REQUIRE(split(huge, kMax).size() == 1);
  // chunk: ceil(size / chunks) used to add size + chunks - 1.
  const std::vector<Tensor> halves = chunk(huge, 2);
  REQUIRE(halves.size() == 2);
  REQUIRE(halves[0].size(0) == k2p62);
  REQUIRE(halves[1].size(0) == k2p62 - 1);
  const Tensor x = Tensor::arange(0, 5);
  REQUIRE(chunk(x, kMax).size() == 5);
  // Sizes that sum past int64 (this one wraps to exactly 5).
  REQUIRE_THROWS_MATCHES(split(x, {kMax, kMax, 7}), ShapeError,
                         Catch::Message("split: expected sizes that sum to 5 (dim 0 of shape [5]), "
                                        "got [9223372036854775807, 9223372036854775807, 7], whose "
                                        "sum overflows int64 at position 1"));
  REQUIRE_THROWS_MATCHES(cat({huge, huge}), ShapeError,
                         Catch::Message("cat: expected a total size along dim 0 that fits int64, "
                                        "got it overflowing at tensor 1 (size "
                                        "9223372036854775807)"));
  REQUIRE_THROWS_AS(stack({huge, huge}), ShapeError);  // [2, 2^63 - 1] elements
}

TEST_CASE("one_hot rejects a class count that overflows int64", "[tensor]") {
  const Tensor largest = Tensor::from_vector<std::int64_t>({kMax});
  REQUIRE_THROWS_MATCHES(one_hot(largest, -1), ValueError,
                         Catch::Message("one_hot: expected a largest index below 2^63 - 1 to "
                                        "infer num_classes, got 9223372036854775807"));
  REQUIRE_THROWS_MATCHES(one_hot(Tensor::from_vector<std::int64_t>({0, 1}), kMax), ShapeError,
                         Catch::Message("one_hot: element count of [2, 9223372036854775807] "
                                        "overflows int64"));
  REQUIRE_THROWS_MATCHES(one_hot(Tensor::from_vector<std::int64_t>({0}), kMax), ShapeError,
                         MessageContains("one_hot: expected a byte size that fits int64"));
}
