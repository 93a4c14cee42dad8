// The ZeRO-checkpoint snippets of docs/training.md: a model trained one step with ZeRO-1 on 4
// ranks, saved shard by shard, and loaded with ZeRO-2 on 2 ranks (the parameters and the step
// come back).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "collective/collective.h"
#include "optim/optim.h"
#include "tensor/tensor.h"
using namespace ruccl;
using namespace ruccl::optim;

namespace {
std::shared_ptr<nn::Sequential> make_model(std::uint64_t seed) {
  Generator gen(seed);
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(5, 8, gen), std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Linear>(8, 3, gen)});
  model->assign_param_ids(1);
  return model;
}
}  // namespace

int main() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ruccl_doc_zero_" + std::to_string(::getpid()));
  std::vector<float> saved;
  run_ranks(InProcessGroup::create(4), [&](Communicator& comm) {
    auto net = make_model(1);
    nn::Sequential& model = *net;
    DataParallel dp = DataParallel::initialize(comm, model, 0, {.zero_stage = 1});
    Adam optimizer;
    Generator shuffle(7);
    Generator data(100 + comm.rank());
    const Tensor x = Tensor::randn({2, 5}, data), y = Tensor::randn({2, 3}, data);
    const autodiff::Var loss =
        nn::mse_loss(model.forward(autodiff::Var(x)), autodiff::Var(y), nn::Reduction::Sum);
    dp.step(optimizer, 0.01, model, dp.backward(model, loss, 2, LossReduction::Sum));
    const std::int64_t step = 1;
    // doc-begin
    save_zero_checkpoint(dp, dir, optimizer, model, {.step = step, .rng = shuffle.state()});
    // doc-end
    if (comm.rank() == 0) saved = model.parameters()[0].value().to_vector<float>();
  });
  std::atomic<bool> ok{true};
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    auto net = make_model(2);  // other values: the load replaces them
    nn::Sequential& model = *net;
    Adam optimizer;
    // doc-begin
    DataParallel dp = DataParallel::initialize(comm, model, 0, {.zero_stage = 2});
    CallerState caller = load_zero_checkpoint(dp, dir, optimizer, model);
    // doc-end
    if (caller.step != 1 || model.parameters()[0].value().to_vector<float>() != saved) {
      std::printf("rank %d: the checkpoint read back differs from the saved one\n", comm.rank());
      ok = false;
    }
  });
  std::filesystem::remove_all(dir);
  if (!ok) return 1;
  std::printf("OK: zero_checkpoint\n");
  return 0;
}
