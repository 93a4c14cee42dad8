// The model of docs/models.md trained for 30 steps on two data-parallel ranks (threads here; the
// same code runs over processes with Communicator::from_env()): AdamW, a warm-up cosine
// schedule, two accumulated micro-batches per step, a checkpoint after step 15, and a resume
// that ends bit for bit where the uninterrupted run ends.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "collective/collective.h"
#include "optim/optim.h"

using namespace ruccl;
using autodiff::Var;

// Embedding -> mean over the tokens -> LayerNorm -> Linear -> GELU -> Linear.
class Classifier : public nn::Cloneable<Classifier> {
 public:
  Classifier()
      : emb(register_module("emb", nn::Embedding(100, 16))),
        norm(register_module("norm", nn::LayerNorm(16))),
        fc1(register_module("fc1", nn::Linear(16, 32))),
        fc2(register_module("fc2", nn::Linear(32, 4))) {}
  Var forward(const Tensor& tokens) {  // [batch, 5] I64 -> logits [batch, 4]
    return fc2(fc1(norm(emb(tokens).mean(1))).gelu());
  }
  nn::ModuleHandle<nn::Embedding> emb;
  nn::ModuleHandle<nn::LayerNorm> norm;
  nn::ModuleHandle<nn::Linear> fc1, fc2;
};

constexpr std::int64_t kSteps = 30;
constexpr int kMicroBatches = 2;  // per rank and step, of 2 samples each

// Step `step`'s global batch holds 8 sequences of 5 tokens, labelled by their token sum mod 4;
// rank r's micro-batch m is samples [4r + 2m, 4r + 2m + 2).
std::pair<Tensor, Tensor> micro_batch(std::int64_t step, int rank, int micro) {
  Generator gen(static_cast<std::uint64_t>(1000 + step));
  std::vector<std::int64_t> tokens, labels;
  for (int i = 0; i < 8; ++i) {
    std::int64_t sum = 0;
    for (int j = 0; j < 5; ++j) {
      tokens.push_back(static_cast<std::int64_t>(gen.next_below(100)));
      sum += tokens.back();
    }
    labels.push_back(sum % 4);
  }
  const std::int64_t first = 4 * rank + 2 * micro;
  return {Tensor::from_vector(tokens, {8, 5}).narrow(0, first, 2),
          Tensor::from_vector(labels, {8}).narrow(0, first, 2)};
}

struct Result {
  std::vector<double> losses;  // rank 0's mean loss per step
  Tensor weight;               // rank 0's fc2.weight at the end
};

// Steps [first, last) on two ranks: from `init`, or from the checkpoint in `dir` when first > 0;
// saves one there when last < kSteps.
Result train(const Classifier& init, std::int64_t first, std::int64_t last,
             const std::filesystem::path& dir) {
  Result result;
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    auto model = init.clone_as<Classifier>();  // a replica per rank, with its own parameters
    optim::DataParallel dp = optim::DataParallel::initialize(comm, *model);
    optim::AdamW adamw;  // torch.optim.AdamW's defaults (weight decay 1e-2)
    optim::WarmupCosineLr schedule(3e-3, /*warmup_steps=*/5, /*total_steps=*/kSteps);
    optim::GradientsAccumulator accumulator;
    const std::filesystem::path file = dir / ("rank" + std::to_string(comm.rank()) + ".ckpt");
    if (first > 0) {
      optim::TrainingRecord::load(file).restore(
          *model, &adamw, &schedule, &accumulator,
          {.rank = comm.rank(), .world_size = comm.world_size()});
    }
    for (std::int64_t step = first; step < last; ++step) {
      double loss_sum = 0;
      for (int micro = 0; micro < kMicroBatches; ++micro) {
        auto [tokens, labels] = micro_batch(step, comm.rank(), micro);
        model->zero_grad();
        Var loss = nn::cross_entropy(model->forward(tokens), labels);  // the mean over 2 samples
        loss.backward();
        accumulator.accumulate(optim::GradientsParams::from_module(*model), 2.0,
                               optim::LossReduction::Mean);
        loss_sum += 2.0 * loss.value().item<double>();
      }
      // Every rank gets the gradient of the mean loss over the step's 8 samples (4 per rank).
      const optim::GradientsParams grads = dp.reduce(*model, accumulator.take());
      adamw.step(schedule.step(), *model, grads);
      if (comm.rank() == 0) result.losses.push_back(loss_sum / 4);
    }
    if (last < kSteps) {
      optim::CallerState caller{.step = last, .rank = comm.rank(), .world_size = comm.world_size()};
      optim::TrainingRecord::capture(*model, &adamw, &schedule, &accumulator, caller).save(file);
    }
    if (comm.rank() == 0) result.weight = model->fc2->weight().value().clone();
  });
  return result;
}

int main() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "ruccl_models_md";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  manual_seed(0);  // the same initial weights in every run, on every platform
  const Classifier model;
  const Result whole = train(model, 0, kSteps, dir);
  train(model, 0, 15, dir);                              // stops after step 15, saving a checkpoint
  const Result resumed = train(model, 15, kSteps, dir);  // a fresh replica, restored from it
  std::filesystem::remove_all(dir);
  std::printf("loss: step 1 %.4f, step 30 %.4f\n", whole.losses.front(), whole.losses.back());
  const bool same = whole.weight.to_vector<float>() == resumed.weight.to_vector<float>();
  std::printf("resumed after step 15: fc2.weight %s the uninterrupted run's\n",
              same ? "is bit for bit" : "DIFFERS from");
  if (!same || !(whole.losses.back() < whole.losses.front())) return 1;
  std::printf("OK: train\n");
  return 0;
}
