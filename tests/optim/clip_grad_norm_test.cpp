// clip_grad_norm_: the global L2 norm and the clipping against torch.nn.utils.clip_grad_norm_
// (tools/golden/clip_grad_norm_golden.py -> tests/data/optim_clip_grad_norm.txt), its errors, and
// the sharded form (one all-reduce of the squared norm).
#include <catch2/catch.hpp>

#include <cmath>

#include "optim/clip_grad_norm.h"
#include "tests/optim/golden_data.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using ruccl::optim::test_support::read_golden;
using ruccl::testing::TensorNear;

namespace {

struct GoldenGrad {
  Shape shape;
  std::vector<double> before, after;
};

struct GoldenCase {
  std::string name;
  DType dtype = DType::F64;
  double max_norm = 0.0;
  std::vector<GoldenGrad> grads;
  double norm = 0.0;
};

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  for (const auto& line : read_golden("optim_clip_grad_norm.txt")) {
    if (line.key == "case") {
      cases.push_back({line.words.at(0),
                       line.words.at(1) == "F32" ? DType::F32 : DType::F64,
                       std::stod(line.words.at(2)),
                       {},
                       0.0});
    } else if (line.key == "grad") {
      GoldenGrad g;
      int part = 0;
      for (const std::string& w : line.words) {
        if (w == "|") {
          ++part;
        } else if (part == 0) {
          g.shape.push_back(std::stoll(w));
        } else {
          (part == 1 ? g.before : g.after).push_back(std::stod(w));
        }
      }
      cases.back().grads.push_back(std::move(g));
    } else if (line.key == "norm") {
      cases.back().norm = line.numbers().at(0);
    }
  }
  return cases;
}

Tensor golden_tensor(const std::vector<double>& values, const Shape& shape, DType dtype) {
  return Tensor::from_vector<double>(values, shape).to(dtype);
}

}  // namespace

TEST_CASE("clip_grad_norm_ matches torch.nn.utils.clip_grad_norm_ in F32 and F64", "[optim]") {
  const std::vector<GoldenCase> cases = golden_cases();
  REQUIRE(cases.size() == 8);
  for (const GoldenCase& c : cases) {
    INFO(c.name << " " << c.dtype);
    GradientsParams grads;
    for (std::size_t i = 0; i < c.grads.size(); ++i) {
      grads.insert(static_cast<ParamId>(i + 1),
                   golden_tensor(c.grads[i].before, c.grads[i].shape, c.dtype));
    }
    const Tensor first = *grads.get(1);  // shares storage: clipping is in place
    const double norm = clip_grad_norm_(grads, c.max_norm);
    // F32: PyTorch accumulates the norm in float, we in double; 1e-6 relative covers float's
    // rounding of a few terms. F64: the sums differ only in their order.
    const double rtol = c.dtype == DType::F32 ? 1e-6 : 1e-13;
    CHECK(norm == Approx(c.norm).epsilon(rtol).margin(1e-300));
    for (std::size_t i = 0; i < c.grads.size(); ++i) {
      CHECK_THAT(*grads.get(static_cast<ParamId>(i + 1)),
                 TensorNear(golden_tensor(c.grads[i].after, c.grads[i].shape, c.dtype), rtol,
                            c.dtype == DType::F32 ? 1e-7 : 1e-15));
    }
    CHECK_THAT(first, TensorNear(golden_tensor(c.grads[0].after, c.grads[0].shape, c.dtype), rtol,
                                 c.dtype == DType::F32 ? 1e-7 : 1e-15));
  }
}

TEST_CASE("grad_norm_squared accumulates in float64 and is 0 for no gradients", "[optim]") {
  GradientsParams none;
  CHECK(grad_norm_squared(none) == 0.0);
  GradientsParams grads;
  // 2^24 + 1 in float32 steps: 1 + (2^12)^2 = 16777217 is exact only in float64.
  grads.insert(1, Tensor::from_vector<float>({4096.0f, 1.0f}, {2}));
  CHECK(grad_norm_squared(grads) == 16777217.0);
}

TEST_CASE("clip_grad_norm_ rejects a negative or NaN max_norm", "[optim]") {
  GradientsParams grads;
  grads.insert(1, Tensor::ones({2}));
  CHECK_THROWS_MATCHES(clip_grad_norm_(grads, -1.0), ValueError,
                       Catch::Matchers::Message("clip_grad_norm_: expected max_norm >= 0, got -1"));
  CHECK_THROWS_AS(clip_grad_norm_(grads, std::nan("")), ValueError);
  CHECK_THAT(*grads.get(1), TensorNear(Tensor::ones({2})));
}

TEST_CASE("clip_grad_norm_ over sharded gradients scales every shard by the global norm",
          "[optim]") {
  // Rank 0 holds [3], rank 1 holds [4]: the global norm is 5 (each local one is 3 or 4).
  auto out = ruccl::testing::run_group(2, [](Communicator& comm) {
    GradientsParams shard;
    shard.insert(static_cast<ParamId>(comm.rank() + 1),
                 Tensor::full({1}, comm.rank() == 0 ? 3.0 : 4.0, DType::F64));
    const double norm = clip_grad_norm_(shard, 1.0, comm);
    return std::pair{norm, shard.get(static_cast<ParamId>(comm.rank() + 1))->item<double>()};
  });
  const double scale = 1.0 / (5.0 + 1e-6);
  CHECK(out[0].value().first == 5.0);
  CHECK(out[1].value().first == 5.0);
  CHECK(out[0].value().second == Approx(3.0 * scale).epsilon(1e-15));
  CHECK(out[1].value().second == Approx(4.0 * scale).epsilon(1e-15));
}
