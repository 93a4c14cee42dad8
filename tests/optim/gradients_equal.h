#pragma once
// Bit-for-bit comparison of two GradientsParams, for the optim tests (main thread only: Catch2
// assertions are not thread-safe).
#include <catch2/catch.hpp>

#include "optim/gradients_params.h"
#include "tests/support/tensor_matchers.h"

namespace ruccl::optim::test_support {

/// The same ParamIds, each with the same shape, dtype and bits.
inline void require_equal(const GradientsParams& got, const GradientsParams& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [id, g] : want.entries()) {
    INFO("ParamId " << id);
    REQUIRE(got.get(id));
    REQUIRE_THAT(*got.get(id), ruccl::testing::TensorEqual(g));
  }
}

}  // namespace ruccl::optim::test_support
