// The data-parallel step of docs/training.md on two in-process ranks with uneven batches (3 and 1
// samples): after one step both replicas hold exactly the same parameters, and they are those of
// one replica that took the step on all 4 samples at once (the mean loss over the global batch).
#include <cmath>
#include <cstdio>
#include <vector>

#include "autodiff/autodiff.h"
#include "collective/collective.h"
#include "optim/optim.h"
using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;

const Tensor kInputs = Tensor::from_vector<float>({1, 2, 0, -1, 3, 1, 2, 2, -2, 0, 1, 4}, {4, 3});
const Tensor kLabels = Tensor::from_vector<std::int64_t>({0, 1, 1, 0}, {4});

// One SGD step of a fresh Linear(3 -> 2) on samples [first, first + n); returns its parameters.
std::vector<float> step(Communicator* comm, std::int64_t first, std::int64_t n) {
  Generator gen(5);
  nn::Linear model(3, 2, gen);
  Sgd optimizer;
  const double lr = 0.5;
  const Tensor x = kInputs.narrow(0, first, n);
  const Tensor y = kLabels.narrow(0, first, n);
  if (comm == nullptr) {  // one replica, the whole batch
    Var loss = nn::cross_entropy(model.forward(Var(x)), y);
    loss.backward();
    optimizer.step(lr, model, GradientsParams::from_module(model));
  } else {
    DataParallel dp = DataParallel::initialize(*comm, model, /*root=*/0);
    // doc-begin
    Var loss = nn::cross_entropy(model.forward(Var(x)), y);  // the mean over this rank's batch
    loss.backward();
    optimizer.step(lr, model,
                   dp.reduce(model, GradientsParams::from_module(model),
                             static_cast<double>(x.size(0)), LossReduction::Mean));
    // doc-end
  }
  std::vector<float> out = model.weight().var().value().to_vector<float>();
  for (float b : model.bias().var().value().to_vector<float>()) out.push_back(b);
  return out;
}

int main() {
  const std::vector<float> one = step(nullptr, 0, 4);
  std::vector<std::vector<float>> ranks(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    ranks[static_cast<std::size_t>(comm.rank())] =
        comm.rank() == 0 ? step(&comm, 0, 3) : step(&comm, 3, 1);
  });
  if (ranks[0] != ranks[1]) return 1;  // bit-identical replicas
  for (std::size_t i = 0; i < one.size(); ++i) {
    if (std::abs(ranks[0][i] - one[i]) > 1e-6f) return 1;
  }
  std::printf("OK: data_parallel\n");
}
