// The checkpoint snippet of docs/training.md on two in-process ranks: each trains a Linear for
// two steps with Adam, a schedule and an accumulator holding a pending micro-batch, saves, then
// restores into fresh objects; the restored run takes the same third step, bit for bit.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "autodiff/autodiff.h"
#include "collective/collective.h"
#include "optim/optim.h"
#include "tensor/tensor.h"
using namespace ruccl;

struct Run {
  Generator init{7};
  nn::Linear model{4, 2, init};
  optim::Adam adam;
  optim::StepLr schedule{0.01, 2};
  optim::GradientsAccumulator accumulator;

  // One accumulated micro-batch drawn from `shuffle`; every second one ends with a step.
  void micro_step(Generator& shuffle, std::int64_t micro) {
    model.zero_grad();
    const Tensor x = Tensor::randn({3, 4}, shuffle);
    autodiff::Var loss = nn::mse_loss(model.forward(x), Tensor::zeros({3, 2}));
    loss.backward();
    accumulator.accumulate(optim::GradientsParams::from_module(model), 3,
                           optim::LossReduction::Mean);  // a mean over 3 samples
    if (micro % 2 == 1) adam.step(schedule.step(), model, accumulator.mean());
  }
  std::vector<float> params() const {
    std::vector<float> out = model.weight().var().value().to_vector<float>();
    for (float b : model.bias().var().value().to_vector<float>()) out.push_back(b);
    return out;
  }
};

std::vector<float> train(Communicator& comm, const std::filesystem::path& dir) {
  Generator shuffle(100 + static_cast<std::uint64_t>(comm.rank()));
  Generator noise(200);
  const Tensor ema_weights = Tensor::full({2, 4}, 0.5);
  Run first;
  for (std::int64_t micro = 0; micro < 5; ++micro) first.micro_step(shuffle, micro);
  noise.next_below(10);
  const Generator::State noise_at_save = noise.state();
  {
    const std::int64_t step = 2, epoch = 5;  // micro-batches done
    optim::Adam& adam = first.adam;
    optim::StepLr& schedule = first.schedule;
    optim::GradientsAccumulator& accumulator = first.accumulator;
    nn::Linear& model = first.model;
    // doc-begin
    // save, on every rank
    optim::CallerState caller{.step = step,
                              .data_position = epoch,
                              .rng = shuffle.state(),
                              .rank = comm.rank(),
                              .world_size = comm.world_size()};
    caller.set("noise_rng", noise.state());  // anything else the run needs, by name
    caller.set("ema", ema_weights);
    optim::TrainingRecord::capture(model, &adam, &schedule, &accumulator, caller)
        .save(dir / ("rank" + std::to_string(comm.rank()) + ".ckpt"));
    // doc-end
  }
  first.micro_step(shuffle, 5);  // the uninterrupted run goes on

  Run second;  // a new process, in effect
  Generator resumed_shuffle(0), resumed_noise(0);
  {
    const std::filesystem::path path = dir / ("rank" + std::to_string(comm.rank()) + ".ckpt");
    optim::Adam& adam = second.adam;
    optim::StepLr& schedule = second.schedule;
    optim::GradientsAccumulator& accumulator = second.accumulator;
    nn::Linear& model = second.model;
    Generator& shuffle = resumed_shuffle;
    Generator& noise = resumed_noise;
    // doc-begin
    // resume
    optim::TrainingRecord record = optim::TrainingRecord::load(path);  // CheckpointError if damaged
    record.restore(model, &adam, &schedule, &accumulator,  // checks before changing anything
                   {.rank = comm.rank(), .world_size = comm.world_size()});
    shuffle.set_state(record.caller().rng);
    noise.set_state(record.caller().get<Generator::State>("noise_rng"));
    Tensor ema = record.caller().get<Tensor>("ema");  // on the host
    // doc-end
    if (!equal(ema, ema_weights) || !(resumed_noise.state() == noise_at_save)) return {};
  }
  second.micro_step(resumed_shuffle, 5);
  if (second.params() != first.params()) return {};
  return second.params();
}

int main() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("ruccl-doc-checkpoint-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::vector<std::vector<float>> params(2);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    params[static_cast<std::size_t>(comm.rank())] = train(comm, dir);
  });
  std::filesystem::remove_all(dir);
  if (params[0].empty() || params[1].empty()) return 1;
  std::printf("OK: checkpoint\n");
}
