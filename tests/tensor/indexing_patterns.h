#pragma once
// The index patterns of tests/data/tensor_indexing.txt (tools/golden/tensor_indexing.py), spelled
// with ruccl::indexing, by case name; shared by the Tensor and the Var indexing tests.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor/core/tensor.h"
#include "tests/tensor/golden_tensors.h"

namespace ruccl::testing {

/// The cases of tests/data/tensor_indexing.txt (values and gradients from PyTorch), loaded once.
inline const std::map<std::string, GoldenCase>& indexing_golden() {
  static const auto cases = load_golden("tensor_indexing.txt");
  return cases;
}

/// (case name, index list) for every pattern of the golden file, in its order.
inline std::vector<std::pair<std::string, std::vector<indexing::TensorIndex>>> golden_patterns() {
  using namespace ruccl::indexing;
  const Tensor rows = Tensor::from_vector<std::int64_t>({2, 0, 2, -1});
  const Tensor mask = Tensor::from_vector<bool>({true, false, true, true, false});
  return {
      {"slice_int", {Slice(0, 2), 3}},                                   // x[0:2, 3]
      {"full_step", {Slice(), Slice(1, None), Slice(None, None, 2)}},    // x[:, 1:, ::2]
      {"ellipsis_neg", {Ellipsis, -1}},                                  // x[..., -1]
      {"new_axis", {None, 1, Slice(), None}},                            // x[None, 1, :, None]
      {"clamped", {Slice(-2, None), Slice(1, 100, 3), Slice(-100, 2)}},  // x[-2:, 1:100:3, -100:2]
      {"tensor", {Slice(1, None), rows}},                                // x[1:, [2, 0, 2, -1]]
      {"mask", {Slice(), Slice(), mask}},                                // x[:, :, mask]
      {"empty", {Slice(2, 2)}},                                          // x[2:2]
      {"int_ellipsis_step", {1, Ellipsis, Slice(1, None, 2)}},           // x[1, ..., 1::2]
      {"neg_ints", {-1, -4, -5}},                                        // x[-1, -4, -5]
  };
}

}  // namespace ruccl::testing
