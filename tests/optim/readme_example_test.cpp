// Runs the README's model-training example (extracted from README.md into readme_example.cpp by
// tests/CMakeLists.txt and linked into this binary): two ranks train on synthetic images that a
// small MLP can learn, and the loss must fall.
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "tensor/core/tensor.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/index.h"
#include "tensor/random/generator.h"

// Defined by the README example (global namespace).
std::vector<float> train(const ruccl::Tensor& images, const ruccl::Tensor& labels);

using namespace ruccl;

namespace {

/// How far apart the class prototypes are, against noise of standard deviation 1 in each pixel:
/// weak enough that the loss falls gradually over the example's 100 steps (from ln 10 = 2.30 to
/// about 0.6), not in the first few.
const double kSignal = 0.1;

/// `n` images [n, 784] F32 and labels [n] I64: image i is kSignal times the prototype of its class
/// (one fixed random image per class) plus noise, so the classes overlap but are learnable.
std::pair<Tensor, Tensor> synthetic_images(std::int64_t n, std::uint64_t seed) {
  Generator gen(seed);
  const Tensor prototypes = Tensor::randn({10, 784}, gen);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  for (auto& label : labels) label = static_cast<std::int64_t>(gen.next_below(10));
  const Tensor y = Tensor::from_vector<std::int64_t>(labels, {n});
  const Tensor x = add(mul(index_select(prototypes, 0, y), kSignal), Tensor::randn({n, 784}, gen));
  return {x, y};
}

float mean_of(const std::vector<float>& v, std::size_t first, std::size_t count) {
  return std::accumulate(v.begin() + static_cast<std::ptrdiff_t>(first),
                         v.begin() + static_cast<std::ptrdiff_t>(first + count), 0.0f) /
         static_cast<float>(count);
}

}  // namespace

TEST_CASE("the README training example runs on two ranks and its loss falls", "[optim]") {
  const auto [images, labels] = synthetic_images(12800, 7);
  const std::vector<float> losses = train(images, labels);
  REQUIRE(losses.size() == 100);
  // Ten classes start near chance, cross-entropy ln 10 = 2.30; 100 Adam steps bring the last five
  // to about 0.6, a quarter of the first five (half leaves room for other rounding).
  const float first = mean_of(losses, 0, 5);
  const float last = mean_of(losses, 95, 5);
  INFO("mean loss of steps 0-4: " << first << ", of steps 95-99: " << last);
  CHECK(first > 1.5f);
  CHECK(last < 0.5f * first);
}
