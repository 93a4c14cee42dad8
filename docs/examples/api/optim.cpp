// The optimizer and DataParallel snippets of docs/api.md on two in-process ranks: a classifier
// Linear(3 -> 2), one SGD step with momentum, then one data-parallel step; both replicas end with
// bit-identical parameters.
#include <cstdio>
#include <vector>

#include "autodiff/autodiff.h"
#include "collective/collective.h"
#include "optim/optim.h"
using namespace ruccl;
using namespace ruccl::nn;
using namespace ruccl::optim;
using autodiff::Var;

std::vector<float> train(Communicator& comm) {
  Generator gen(3);
  Linear model(3, 2, gen);
  const Tensor x =
      Tensor::from_vector<float>({1, 2, 0, -1, 3, 1}, {2, 3}).add(static_cast<double>(comm.rank()));
  const Tensor y = Tensor::from_vector<std::int64_t>({0, 1}, {2});
  const double batch_size = 2;
  {
    model.zero_grad();
    Var local = cross_entropy(model.forward(Var(x)), y);
    local.backward();
    const GradientsParams grads = GradientsParams::from_module(model);
    // doc-begin
    Sgd sgd({.momentum = 0.5});
    sgd.step(/*lr=*/0.125, model, grads);
    // doc-end
  }
  model.zero_grad();
  Sgd optimizer({.momentum = 0.9});
  const double lr = 0.1;
  // doc-begin
  DataParallel dp = DataParallel::initialize(comm, model, /*root=*/0);
  Var loss = cross_entropy(model.forward(x), y);  // the mean over this rank's batch_size samples
  loss.backward();
  optimizer.step(
      lr, model,
      dp.reduce(model, GradientsParams::from_module(model), batch_size, LossReduction::Mean));
  // doc-end
  std::vector<float> out = model.weight().var().value().to_vector<float>();
  for (float b : model.bias().var().value().to_vector<float>()) out.push_back(b);
  return out;
}

int main() {
  std::vector<std::vector<float>> params(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    params[static_cast<std::size_t>(comm.rank())] = train(comm);
  });
  if (params[0] != params[1] || params[0].size() != 8) return 1;
  std::printf("OK: optim\n");
}
