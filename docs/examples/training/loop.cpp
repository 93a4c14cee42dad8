// The training loop of docs/training.md: an MLP on 784-value inputs, Adam, a warm-up cosine
// schedule. The batches are three passes over 60 random ones whose label is the position of the
// largest of the input's first ten values: the mean loss over them must fall below half its start.
#include <cstdio>
#include <utility>
#include <vector>

#include "autodiff/grad_mode.h"
#include "autodiff/nn/nn.h"
#include "optim/optim.h"
#include "tensor/tensor.h"
using namespace ruccl;

std::vector<std::pair<Tensor, Tensor>> random_batches(int count) {
  Generator gen(1);
  std::vector<std::pair<Tensor, Tensor>> batches;
  for (int b = 0; b < count; ++b) {
    Tensor x = Tensor::randn({16, 784}, gen);
    batches.emplace_back(x, argmax(x.narrow(1, 0, 10), 1));
  }
  for (int pass = 1; pass < 3; ++pass) {
    for (int b = 0; b < count; ++b) batches.push_back(batches[static_cast<std::size_t>(b)]);
  }
  return batches;
}

double mean_loss(nn::Module& model, const std::vector<std::pair<Tensor, Tensor>>& batches) {
  const autodiff::NoGradGuard no_grad;
  double total = 0;
  for (const auto& [x, y] : batches) {
    total += nn::cross_entropy(model.forward(x), y).value().item<double>();
  }
  return total / static_cast<double>(batches.size());
}

int main() {
  const std::vector<std::pair<Tensor, Tensor>> batches = random_batches(60);
  Generator same_seed(0);  // the model below before training: the same weights
  nn::Sequential untrained{nn::Linear(784, 512, same_seed), nn::ReLU(),
                           nn::Linear(512, 10, same_seed)};
  const double before = mean_loss(untrained, batches);

  // doc-begin
  Generator gen(0);
  nn::Sequential model{nn::Linear(784, 512, gen), nn::ReLU(), nn::Linear(512, 10, gen)};
  optim::Adam adam;  // torch.optim.Adam defaults
  optim::WarmupCosineLr schedule(1e-3, /*warmup_steps=*/10, /*total_steps=*/180);

  for (const auto& [x, y] : batches) {
    model.zero_grad();
    autodiff::Var loss = nn::cross_entropy(model.forward(x), y);
    loss.backward();
    adam.step(schedule.step(), model, optim::GradientsParams::from_module(model));
  }
  // doc-end
  const double after = mean_loss(model, batches);
  std::printf("mean loss %.4f -> %.4f\n", before, after);
  if (!(after < 0.5 * before)) return 1;
  std::printf("OK: loop\n");
}
