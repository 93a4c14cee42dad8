// The fold kernels' chunk arithmetic (chunk_of, host and device) agrees with the balanced chunks
// every algorithm uses: otherwise a GPU fold would use another rank order than the CPU's.
#include <catch2/catch.hpp>

#include "collective/algorithms/algorithm.h"
#include "cuda/collective/fold_kernels.cuh"

TEST_CASE("chunk_of puts every element in the balanced chunk that holds it", "[fold]") {
  for (std::size_t w = 1; w <= 9; ++w) {
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{64},
          std::size_t{257}, std::size_t{1000}, std::size_t{1031}}) {
      for (std::size_t c = 0; c < w; ++c) {
        const std::size_t begin = ruccl::chunk_begin(c, n, w);
        for (std::size_t e = begin; e < begin + ruccl::chunk_size(c, n, w); ++e) {
          INFO("n " << n << " w " << w << " e " << e);
          REQUIRE(ruccl::cuda::fold::chunk_of(e, n, w) == c);
        }
      }
    }
  }
  // The demo's case: 257 over 4 ranks is 65, 64, 64, 64.
  CHECK(ruccl::cuda::fold::chunk_of(64, 257, 4) == 0);
  CHECK(ruccl::cuda::fold::chunk_of(65, 257, 4) == 1);
  CHECK(ruccl::cuda::fold::chunk_of(256, 257, 4) == 3);
}
