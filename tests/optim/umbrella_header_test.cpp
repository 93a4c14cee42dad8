// optim/optim.h alone is enough for a training step: nn::Sequential, the layers and the losses
// come with it. This file must include nothing else of ruCCL (it is the compile test).
#include <catch2/catch.hpp>

#include "optim/optim.h"

TEST_CASE("optim/optim.h alone gives nn::Sequential, the losses and the optimizers", "[optim]") {
  using namespace ruccl;
  Generator gen(1);
  nn::Sequential model{nn::Linear(3, 4, gen), nn::ReLU(), nn::Linear(4, 1, gen)};
  const autodiff::Var x(Tensor::ones({2, 3}), false);
  const autodiff::Var y(Tensor::zeros({2, 1}), false);
  nn::mse_loss(model.forward(x), y).backward();
  optim::GradientsParams grads = optim::GradientsParams::from_module(model);
  CHECK(grads.size() == 4);
  const double norm = optim::clip_grad_norm_(grads, 1e-3);
  CHECK(norm > 0.0);
  CHECK(optim::grad_norm_squared(grads) == Approx(1e-6).epsilon(1e-4));
  optim::Sgd sgd;
  sgd.step(0.1, model, grads);
}
