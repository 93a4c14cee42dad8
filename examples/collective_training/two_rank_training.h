#pragma once
// The logic of `collective_training run|resume DIR` (docs/training.md). Its checks run as the
// example's CTest tests (examples/CMakeLists.txt); the part any program reuses lives in the
// library (optim::load_on_every_rank, tested in tests/optim/checkpoint/agreed_load_test.cpp).
//
// Two ranks -- threads with in-process Communicators (run_two_ranks), or two processes started
// by a launcher, each with Communicator::from_env() (run_this_rank) -- each with a Linear(2 -> 1)
// with weight [[0.5, -0.25]] (ParamId 1) and bias [0.25] (ParamId 2); SGD with momentum 0.5,
// dampening 0, lr 0.125; MSE (mean) loss; rank 0 sees x = [1, 2], y = 1 and rank 1 sees x = [-1,
// 1], y = 0; gradients averaged with GradientsParams::all_reduce_with(comm, Mean). Every value
// involved is a dyadic rational, so the results are exact:
//   after step 1: (w0, w1, b) = [0.53125, 0.0, 0.40625]
//   after step 2: (w0, w1, b) = [0.5390625, 0.15625, 0.5078125]
#include <array>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "collective/in_process_group.h"
#include "collective/run_ranks.h"
#include "optim/checkpoint/agreed_load.h"
#include "optim/checkpoint/training_record.h"
#include "optim/gradients_params.h"
#include "optim/rank_agreement.h"
#include "optim/sgd.h"

namespace ruccl::examples::collective_training {

/// (w0, w1, b) of the Linear.
using Values = std::array<float, 3>;

inline constexpr Values kAfterStep1 = {0.53125f, 0.0f, 0.40625f};
inline constexpr Values kAfterStep2 = {0.5390625f, 0.15625f, 0.5078125f};
inline constexpr double kLr = 0.125;
inline constexpr int kWorld = 2;

/// What one rank saw: its parameters after each step.
struct RankReport {
  Values after_step1{};
  Values after_step2{};
};

/// run: step 1, save, step 2. resume: load step 1, step 2.
enum class Mode { Run, Resume };

/// The initial replica on `device`.
inline std::shared_ptr<nn::Linear> make_model(Device device) {
  Generator unused(0);
  auto model = std::make_shared<nn::Linear>(2, 1, unused);
  model->weight().set_id(1);
  model->bias().set_id(2);
  model->weight().set_value(Tensor::from_vector<float>({0.5f, -0.25f}, {1, 2}).to(device));
  model->bias().set_value(Tensor::from_vector<float>({0.25f}, {1}).to(device));
  return model;
}

/// The SGD of the example.
inline optim::Sgd make_optimizer() { return optim::Sgd({.momentum = 0.5, .dampening = 0.0}); }

inline Values values_of(const nn::Linear& model) {
  const std::vector<float> w = model.weight().value().to(Device::cpu()).to_vector<float>();
  const std::vector<float> b = model.bias().value().to(Device::cpu()).to_vector<float>();
  return {w[0], w[1], b[0]};
}

/// "[0.53125, 0.0, 0.40625]" (shortest exact decimal; integral values keep a ".0").
inline std::string format_values(const Values& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::ostringstream s;
    s.precision(9);
    s << v[i];
    std::string text = s.str();
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    out += (i ? ", " : "") + text;
  }
  return out + "]";
}

/// Throws std::runtime_error when `got` is not exactly `expected`.
inline void expect_exact(const char* when, int rank, const Values& got, const Values& expected) {
  if (got != expected) {
    throw std::runtime_error(str("rank ", rank, " ", when, ": expected (w0, w1, b) = ",
                                 format_values(expected), ", got ", format_values(got)));
  }
}

/// One training step on this rank's sample, gradients averaged over the ranks.
inline void train_step(Communicator& comm, nn::Linear& model, optim::Sgd& sgd) {
  const Device device = comm.device();
  const bool first = comm.rank() == 0;
  const Tensor x =
      Tensor::from_vector<float>(
          first ? std::vector<float>{1.0f, 2.0f} : std::vector<float>{-1.0f, 1.0f}, {1, 2})
          .to(device);
  const Tensor y = Tensor::from_vector<float>({first ? 1.0f : 0.0f}, {1, 1}).to(device);
  model.zero_grad();
  nn::mse_loss(model.forward(autodiff::Var(x)), autodiff::Var(y)).backward();
  const optim::GradientsParams grads =
      optim::GradientsParams::from_module(model).all_reduce_with(comm, ReduceOperation::Mean);
  sgd.step(kLr, model, grads);
}

/// DIR/rank<r>.ckpt
inline std::filesystem::path checkpoint_path(const std::filesystem::path& dir, int rank) {
  return dir / ("rank" + std::to_string(rank) + ".ckpt");
}

/// One rank of `run DIR` (DIR exists already).
inline RankReport run_rank(Communicator& comm, const std::filesystem::path& dir) {
  auto model = make_model(comm.device());
  optim::Sgd sgd = make_optimizer();
  RankReport report;
  train_step(comm, *model, sgd);
  report.after_step1 = values_of(*model);
  expect_exact("after step 1", comm.rank(), report.after_step1, kAfterStep1);
  optim::TrainingRecord::capture(*model, &sgd, nullptr, nullptr,
                                 {.step = 1, .rank = comm.rank(), .world_size = comm.world_size()})
      .save(checkpoint_path(dir, comm.rank()));
  train_step(comm, *model, sgd);
  report.after_step2 = values_of(*model);
  expect_exact("after step 2", comm.rank(), report.after_step2, kAfterStep2);
  return report;
}

/// One rank of `resume DIR`: every rank loads its file first and the ranks agree that all loads
/// succeeded (optim::load_on_every_rank: a missing file strands no rank) before the training
/// collectives start.
inline RankReport resume_rank(Communicator& comm, const std::filesystem::path& dir) {
  const optim::TrainingRecord record =
      optim::load_on_every_rank(comm, checkpoint_path(dir, comm.rank()));
  auto model = make_model(comm.device());
  optim::Sgd sgd = make_optimizer();
  record.restore(*model, &sgd, nullptr, nullptr,
                 {.rank = comm.rank(), .world_size = comm.world_size()});
  RankReport report;
  report.after_step1 = values_of(*model);
  expect_exact("restored step 1", comm.rank(), report.after_step1, kAfterStep1);
  train_step(comm, *model, sgd);
  report.after_step2 = values_of(*model);
  expect_exact("after step 2", comm.rank(), report.after_step2, kAfterStep2);
  return report;
}

/// `run` on a rank of its own: checks on every rank that DIR does not exist, agrees on it (so no
/// rank sees the folder another has just made), then rank 0 makes DIR and the ranks meet again
/// before any writes there. `resume` needs nothing more. std::runtime_error naming DIR on every
/// rank when it exists; std::runtime_error when the world size is not kWorld.
inline RankReport run_this_rank(Communicator& comm, Mode mode, const std::filesystem::path& dir) {
  if (comm.world_size() != kWorld) {
    throw std::runtime_error(str("expected ", kWorld, " ranks, got a world of ", comm.world_size(),
                                 " (start with ruccl-run --nproc-per-node ", kWorld, ")"));
  }
  if (mode == Mode::Resume) return resume_rank(comm, dir);
  std::error_code ec;
  const bool exists = std::filesystem::exists(dir, ec) || std::filesystem::is_symlink(dir, ec);
  const auto seen = optim::all_gather_words(comm, {exists ? 1 : 0}, "run: DIR is new");
  for (const auto& s : seen) {
    if (s[0] != 0) {
      throw std::runtime_error(str("run: ", dir,
                                   " already exists; `run` needs a new directory (use `resume ",
                                   dir.string(), "` to continue from it)"));
    }
  }
  if (comm.rank() == 0) std::filesystem::create_directories(dir);
  comm.barrier(CallOptions().with_label("run: DIR made"));
  return run_rank(comm, dir);
}

/// Runs both ranks on threads (run_ranks) and joins them; rethrows the root cause if any rank
/// failed. `run` refuses an existing DIR (std::runtime_error naming it) and creates it.
inline std::array<RankReport, kWorld> run_two_ranks(Mode mode, const std::filesystem::path& dir,
                                                    Device device) {
  if (mode == Mode::Run) {
    std::error_code ec;
    if (std::filesystem::exists(dir, ec) || std::filesystem::is_symlink(dir, ec)) {
      throw std::runtime_error(str("run: ", dir,
                                   " already exists; `run` needs a new directory "
                                   "(use `resume ",
                                   dir.string(), "` to continue from it)"));
    }
    std::filesystem::create_directories(dir);
  }
  std::array<RankReport, kWorld> reports;
  run_ranks(InProcessGroup::create(kWorld, {device, device}), [&](Communicator& comm) {
    reports[static_cast<std::size_t>(comm.rank())] =
        mode == Mode::Run ? run_rank(comm, dir) : resume_rank(comm, dir);
  });
  return reports;
}

}  // namespace ruccl::examples::collective_training
