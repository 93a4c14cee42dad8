// Training on a device other than the CPU, checked on a machine without one: a stand-in device
// (tests/support/host_device_backend.h: host memory behind a backend registered for CUDA) runs
// forward, backward and the optimizer on "cuda" tensors. What must hold on any device: the
// trajectory is the CPU's bit for bit, and a training record written from device tensors resumes
// on the CPU and back.
#include <catch2/catch.hpp>

#include "autodiff/nn/loss.h"
#include "optim/adam.h"
#include "optim/checkpoint/training_record.h"
#include "optim/gradients_params.h"
#include "tests/optim/scratch_dir.h"
#include "tests/optim/tiny_models.h"
#include "tests/support/host_device_backend.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::TensorEqual;

namespace {

// One step of a Linear(4 -> 3) on the batch (x, y), which are moved to the model's device.
void train_step(nn::Module& model, Optimizer& opt, const Tensor& x, const Tensor& y) {
  const Device device = model.parameters().front().value().device();
  model.zero_grad();
  Var loss = nn::mse_loss(model.forward(Var(x.to(device))), Var(y.to(device)));
  loss.backward();
  opt.step(0.05, model, GradientsParams::from_module(model));
}

}  // namespace

TEST_CASE("a model trains on a device as on the CPU and resumes across devices bit for bit",
          "[optim]") {
  testing::HostDeviceBackend device;
  testing::BackendRegistration registration(DeviceType::CUDA, &device);
  Generator data(11);
  const Tensor x = Tensor::randn({8, 4}, data);
  const Tensor y = Tensor::randn({8, 3}, data);

  // The CPU's trajectory: four steps.
  auto reference = test_support::make_linear(4, 3, 5);
  Adam reference_opt;
  for (int i = 0; i < 4; ++i) train_step(*reference, reference_opt, x, y);

  // The device: two steps, then a record written from device tensors.
  test_support::ScratchDir dir;
  auto on_device = test_support::make_linear(4, 3, 5);
  on_device->to(Device::cuda(0));
  Adam device_opt;
  for (int i = 0; i < 2; ++i) train_step(*on_device, device_opt, x, y);
  for (const nn::Param& p : on_device->parameters()) REQUIRE(p.value().device() == Device::cuda(0));
  TrainingRecord::capture(*on_device, &device_opt).save(dir / "device.ckpt");

  // Resumed on the CPU for a step, recorded again, and resumed on the device for the last one.
  auto on_cpu = test_support::make_linear(4, 3, 99);
  Adam cpu_opt;
  TrainingRecord::load(dir / "device.ckpt").restore(*on_cpu, &cpu_opt);
  train_step(*on_cpu, cpu_opt, x, y);
  TrainingRecord::capture(*on_cpu, &cpu_opt).save(dir / "cpu.ckpt");
  auto back = test_support::make_linear(4, 3, 98);
  back->to(Device::cuda(0));
  Adam back_opt;
  TrainingRecord::load(dir / "cpu.ckpt").restore(*back, &back_opt);
  train_step(*back, back_opt, x, y);

  const auto want = reference->parameters();
  const auto got = back->parameters();
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    REQUIRE(got[i].value().device() == Device::cuda(0));
    REQUIRE_THAT(got[i].value().to(Device::cpu()), TensorEqual(want[i].value()));
  }
  REQUIRE(device.optimizer_updates == 6);  // 2 parameters x (2 + 1) device steps
}
