// Consumer of an installed ruCCL (tests/install): includes the public headers by their installed
// paths and runs one data-parallel training step on two in-process ranks (Linear, MSE, gradients
// averaged by GradientsParams::all_reduce_with, SGD), checking the parameters against the step
// computed in closed form; then saves them with cereal and loads them back. With CUDA it also
// links the device query. Exit 0 on success.
#include <cereal/archives/binary.hpp>
#include <cstdio>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "collective/collective.h"
#include "optim/optim.h"
#include "ruccl/config.h"
#include "tensor/serialize/tensor_archive.h"
#include "tensor/tensor.h"
#if RUCCL_WITH_CUDA
#include "cuda/core/device.h"
#endif

namespace {

using namespace ruccl;

constexpr int kWorld = 2;
constexpr double kLr = 0.125;
// Linear(2 -> 1) starts at w = [0.5, -0.25], b = 0.25; rank r sees one sample (x_r, y_r).
const std::vector<float> kW0 = {0.5f, -0.25f};
constexpr float kB0 = 0.25f;
const std::vector<std::vector<float>> kX = {{1.0f, 2.0f}, {-1.0f, 1.0f}};
const std::vector<float> kY = {1.0f, 0.0f};

/// (w0, w1, b) after one SGD step on the mean over ranks of each rank's MSE gradient:
/// d/dw (w.x + b - y)^2 = 2 (w.x + b - y) x, d/db = 2 (w.x + b - y). Every value is a dyadic
/// rational, so float arithmetic gives it exactly.
std::vector<float> expected_after_step() {
  std::vector<float> grad(3, 0.0f);
  for (int r = 0; r < kWorld; ++r) {
    const float residual = kW0[0] * kX[r][0] + kW0[1] * kX[r][1] + kB0 - kY[r];
    grad[0] += 2 * residual * kX[r][0] / kWorld;
    grad[1] += 2 * residual * kX[r][1] / kWorld;
    grad[2] += 2 * residual / kWorld;
  }
  const float lr = static_cast<float>(kLr);
  return {kW0[0] - lr * grad[0], kW0[1] - lr * grad[1], kB0 - lr * grad[2]};
}

/// One rank: the replica, its sample, the averaged gradient and the SGD step; returns (w0, w1, b).
std::vector<float> train_rank(Communicator& comm) {
  Generator unused(0);
  nn::Linear model(2, 1, unused);
  model.weight().set_value(Tensor::from_vector<float>(kW0, {1, 2}));
  model.bias().set_value(Tensor::from_vector<float>({kB0}, {1}));
  model.assign_param_ids(
      1);          // fresh ids differ between the ranks' replicas; the reduction matches ids
  optim::Sgd sgd;  // plain SGD: no momentum, no weight decay
  const int r = comm.rank();
  const autodiff::Var x(Tensor::from_vector<float>(kX[r], {1, 2}));
  const autodiff::Var y(Tensor::from_vector<float>({kY[r]}, {1, 1}));
  nn::mse_loss(model.forward(x), y).backward();
  const auto grads =
      optim::GradientsParams::from_module(model).all_reduce_with(comm, ReduceOperation::Mean);
  sgd.step(kLr, model, grads);
  std::vector<float> values = model.weight().value().to_vector<float>();
  values.push_back(model.bias().value().item<float>());
  return values;
}

std::string format(const std::vector<float>& v) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + "]";
}

}  // namespace

int main() {
  try {
    std::vector<std::vector<float>> after(kWorld);
    run_ranks(InProcessGroup::create(kWorld),
              [&](Communicator& comm) { after[comm.rank()] = train_rank(comm); });
    const std::vector<float> expected = expected_after_step();
    for (int r = 0; r < kWorld; ++r) {
      if (after[r] != expected) {
        throw std::runtime_error("rank " + std::to_string(r) + " after one step: expected " +
                                 format(expected) + ", got " + format(after[r]));
      }
    }
    // The trained parameters through cereal (a public dependency) and back.
    const Tensor trained = Tensor::from_vector<float>(after[0], {3});
    std::stringstream stream;
    {
      cereal::BinaryOutputArchive out(stream);
      out(trained);
    }
    Tensor loaded;
    {
      cereal::BinaryInputArchive in(stream);
      in(loaded);
    }
    if (loaded.to_vector<float>() != after[0]) {
      throw std::runtime_error("cereal round trip: expected " + format(after[0]) + ", got " +
                               format(loaded.to_vector<float>()));
    }
    std::printf("ruccl %s consumer: %d ranks, one SGD step on the averaged gradient -> %s: ok\n",
                RUCCL_VERSION, kWorld, format(expected).c_str());
#if RUCCL_WITH_CUDA
    std::printf("ruccl::cuda: %s\n", ruccl::cuda::device_status().c_str());
#endif
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ruccl consumer failed: %s\n", e.what());
    return 1;
  }
}
