// The CPU allocator's cache of large blocks (tensor/backend/cpu/cpu_block_cache.h): reuse, what
// keeps a block alive, the idle cap, empty_cache, and that small blocks never enter it.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/backend/cpu/cpu_block_cache.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;

namespace {

constexpr std::int64_t kFloats4MiB = std::int64_t{1} << 20;
constexpr std::size_t k4MiB = std::size_t{4} << 20;

}  // namespace

TEST_CASE("a large block is reused once its last tensor dies, views included", "[tensor]") {
  cpu::empty_cache();
  REQUIRE(cpu::cached_bytes() == 0);
  const void* first = nullptr;
  Tensor view;
  {
    Tensor t = Tensor::full({kFloats4MiB}, 7.0f);
    first = t.data_ptr();
    view = t.narrow(0, 10, 5);  // keeps the block alive
  }
  CHECK(cpu::cached_bytes() == 0);
  CHECK(view.to_vector<float>() == std::vector<float>(5, 7.0f));
  view = Tensor();
  CHECK(cpu::cached_bytes() == k4MiB);
  // The same size takes the idle block; zeros() fills it, whatever it held.
  const Tensor again = Tensor::zeros({kFloats4MiB});
  CHECK(again.data_ptr() == first);
  CHECK(cpu::cached_bytes() == 0);
  CHECK_THAT(again.narrow(0, 0, 1000), testing::TensorEqual(Tensor::zeros({1000})));
}

TEST_CASE("empty_cache frees the idle blocks; small blocks never enter the cache", "[tensor]") {
  cpu::empty_cache();
  { const Tensor small = Tensor::empty({1000}); }  // 4 KB: plain aligned_alloc
  CHECK(cpu::cached_bytes() == 0);
  { const Tensor a = Tensor::empty({kFloats4MiB}); }
  { const Tensor b = Tensor::empty({100000}); }  // 400 KB, rounded to whole 4 KiB pages
  CHECK(cpu::cached_bytes() == k4MiB + 401408);
  cpu::empty_cache();
  CHECK(cpu::cached_bytes() == 0);
}

TEST_CASE("the cache keeps at most 512 MiB idle, freeing the oldest blocks first", "[tensor]") {
  cpu::empty_cache();
  // Five 128 MiB blocks, never touched (no pages are faulted in).
  const std::int64_t floats = std::int64_t{32} << 20;
  std::vector<Tensor> blocks;
  std::vector<const void*> where;
  for (int i = 0; i < 5; ++i) {
    blocks.push_back(Tensor::empty({floats}));
    where.push_back(blocks.back().data_ptr());
  }
  for (Tensor& t : blocks) t = Tensor();  // released oldest (index 0) first
  CHECK(cpu::cached_bytes() == cpu::kMaxIdleBytes);
  // Four idle blocks of this size remain, the newest four: taking four gives those back.
  std::vector<Tensor> taken;
  for (int i = 0; i < 4; ++i) taken.push_back(Tensor::empty({floats}));
  CHECK(cpu::cached_bytes() == 0);
  for (const Tensor& t : taken) {
    CHECK(t.data_ptr() != where[0]);
  }
  taken.clear();
  cpu::empty_cache();
}
