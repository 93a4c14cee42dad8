#pragma once
// Per-rank F64 inputs for the distributed gradchecks: rank r's tensor for a given seed, the same
// on every run and distinct across ranks and seeds.
#include <cstdint>

#include "tensor/tensor.h"

namespace ruccl::test {

inline Tensor rank_input(const Shape& shape, int rank, std::uint64_t seed) {
  Generator gen(seed * 100 + static_cast<std::uint64_t>(rank));
  return Tensor::randn(shape, gen, DType::F64);
}

}  // namespace ruccl::test
