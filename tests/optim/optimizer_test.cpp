// Optimizers against torch.optim golden trajectories (tools/golden/optim_golden.py) and their
// contracts: frozen parameters, missing gradients, state save/load.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>

#include "autodiff/nn/activation.h"
#include "autodiff/nn/linear.h"
#include "autodiff/nn/loss.h"
#include "autodiff/nn/sequential.h"
#include "optim/adam.h"
#include "optim/checkpoint/checkpoint_error.h"
#include "optim/sgd.h"
#include "tensor/ops/elementwise.h"
#include "tests/optim/golden_data.h"
#include "tests/support/host_device_backend.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::optim;
using autodiff::Var;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

// Tolerance of the F64 trajectories: torch's vectorised kernels fuse multiply-adds and order some
// operations differently, which changes the last bits of each step; over 20 steps of this small
// model the drift stays below ~1e-13 relative. 1e-10 leaves margin and still fails on any real
// difference in the update rule (a wrong bias correction or decay shows at 1e-3).
constexpr double kRtol = 1e-10;
constexpr double kAtol = 1e-13;

struct Golden {
  Tensor x, y;
  std::vector<Tensor> init;
  struct Config {
    std::string name;
    double lr = 0;
    std::vector<double> losses;
    std::vector<std::vector<Tensor>> params;  // after each step
  };
  std::vector<Config> configs;
};

const std::vector<Shape> kShapes = {{3, 4}, {3}, {2, 3}, {2}};

Tensor f64(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_vector<double>(v, s);
}

Golden load_golden() {
  Golden g;
  for (const auto& line : test_support::read_golden("optim_trajectories.txt")) {
    if (line.key == "x") g.x = f64(line.numbers(), {5, 4});
    if (line.key == "y") g.y = f64(line.numbers(), {5, 2});
    if (line.key.rfind("init", 0) == 0) {
      g.init.push_back(f64(line.numbers(), kShapes[g.init.size()]));
    }
    if (line.key == "config") {
      Golden::Config c;
      c.name = line.words[0];
      c.lr = std::stod(line.words[2]);
      g.configs.push_back(c);
    }
    if (line.key == "step") {
      g.configs.back().losses.push_back(std::stod(line.words[2]));
      g.configs.back().params.emplace_back();
    }
    if (line.key.rfind("param", 0) == 0) {
      auto& step = g.configs.back().params.back();
      step.push_back(f64(line.numbers(), kShapes[step.size()]));
    }
  }
  return g;
}

/// x -> Linear(4, 3) -> tanh -> Linear(3, 2), F64, ParamIds 1..4 in visit order.
std::shared_ptr<nn::Sequential> make_model(const std::vector<Tensor>& init) {
  Generator gen(7);
  auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(4, 3, gen, nn::LinearOptions{.dtype = DType::F64}),
      std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Linear>(3, 2, gen, nn::LinearOptions{.dtype = DType::F64})});
  model->assign_param_ids(1);
  auto params = model->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) params[i].set_value(init[i].clone());
  return model;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name) {
  if (name == "sgd_plain") return std::make_unique<Sgd>();
  if (name == "sgd_momentum") return std::make_unique<Sgd>(SgdOptions{.momentum = 0.9});
  if (name == "sgd_dampening_wd") {
    return std::make_unique<Sgd>(
        SgdOptions{.momentum = 0.8, .dampening = 0.3, .weight_decay = 0.01});
  }
  if (name == "sgd_nesterov_wd") {
    return std::make_unique<Sgd>(
        SgdOptions{.momentum = 0.9, .weight_decay = 0.05, .nesterov = true});
  }
  if (name == "adam") return std::make_unique<Adam>();
  if (name == "adam_wd") return std::make_unique<Adam>(AdamOptions{0.8, 0.99, 1e-6, 0.1});
  if (name == "adamw") return std::make_unique<AdamW>();
  if (name == "adamw_wd") return std::make_unique<AdamW>(AdamWOptions{0.85, 0.995, 1e-7, 0.2});
  FAIL("unknown optimizer configuration " << name);
  return nullptr;
}

double train_step(nn::Module& model, Optimizer& opt, double lr, const Tensor& x, const Tensor& y) {
  model.zero_grad();
  Var loss = nn::mse_loss(model.forward(Var(x)), Var(y));
  loss.backward();
  opt.step(lr, model, GradientsParams::from_module(model));
  return loss.value().item<double>();
}

}  // namespace

TEST_CASE("Sgd, Adam and AdamW follow torch.optim's 20-step trajectories", "[optim]") {
  const Golden g = load_golden();
  REQUIRE(g.configs.size() == 8);
  for (const auto& config : g.configs) {
    SECTION(config.name) {
      auto model = make_model(g.init);
      auto opt = make_optimizer(config.name);
      REQUIRE(config.params.size() == 20);
      for (std::size_t step = 0; step < config.params.size(); ++step) {
        INFO(config.name << " step " << step + 1);
        const double loss = train_step(*model, *opt, config.lr, g.x, g.y);
        CHECK(loss == Approx(config.losses[step]).epsilon(kRtol));
        const auto params = model->parameters();
        for (std::size_t i = 0; i < params.size(); ++i) {
          INFO("ParamId " << params[i].id());
          REQUIRE_THAT(params[i].value(), TensorNear(config.params[step][i], kRtol, kAtol));
        }
      }
      CHECK(opt->steps(1) == 20);
    }
  }
}

TEST_CASE("AdamW keeps torch's default weight decay when other options are named", "[optim]") {
  // AdamW's options are a type of their own: one designated member resets no other default (an
  // AdamOptions here had weight_decay 0, silently training without decay).
  const AdamW eps_only({.eps = 1e-8});
  CHECK(eps_only.options().weight_decay == 1e-2);
  CHECK(eps_only.options().beta1 == 0.9);
  CHECK(eps_only.options().beta2 == 0.999);
  const AdamW betas({.beta1 = 0.8, .beta2 = 0.99});
  CHECK(betas.options().eps == 1e-8);
  CHECK(betas.options().weight_decay == 1e-2);
  CHECK(AdamW().config() == std::vector<double>{0.9, 0.999, 1e-8, 1e-2});
  // And it trains as torch.optim.AdamW(params, lr) with all of torch's defaults.
  const Golden g = load_golden();
  const auto config = std::find_if(g.configs.begin(), g.configs.end(),
                                   [](const Golden::Config& c) { return c.name == "adamw"; });
  REQUIRE(config != g.configs.end());
  auto model = make_model(g.init);
  AdamW adamw({.eps = 1e-8});
  for (std::size_t step = 0; step < config->params.size(); ++step) {
    INFO("step " << step + 1);
    train_step(*model, adamw, config->lr, g.x, g.y);
    const auto params = model->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      REQUIRE_THAT(params[i].value(), TensorNear(config->params[step][i], kRtol, kAtol));
    }
  }
}

TEST_CASE("every options struct keeps the defaults of the members a caller does not name",
          "[optim]") {
  const SgdOptions sgd{.nesterov = true};
  CHECK(sgd.momentum == 0.0);
  CHECK(sgd.dampening == 0.0);
  CHECK(sgd.weight_decay == 0.0);
  const AdamOptions adam{.eps = 1e-6};
  CHECK(adam.beta1 == 0.9);
  CHECK(adam.beta2 == 0.999);
  CHECK(adam.weight_decay == 0.0);  // torch.optim.Adam's default
  const AdamWOptions adamw{.beta2 = 0.95};
  CHECK(adamw.beta1 == 0.9);
  CHECK(adamw.eps == 1e-8);
  CHECK(adamw.weight_decay == 1e-2);  // torch.optim.AdamW's default
}

TEST_CASE("an optimizer leaves frozen parameters and parameters without a gradient untouched",
          "[optim]") {
  const Golden g = load_golden();
  auto model = make_model(g.init);
  auto params = model->parameters();
  params[0].set_trainable(false);  // fc1.weight frozen
  Sgd sgd({.momentum = 0.9});
  model->zero_grad();
  Var loss = nn::mse_loss(model->forward(Var(g.x)), Var(g.y));
  loss.backward();
  GradientsParams grads = GradientsParams::from_module(*model);
  CHECK_FALSE(grads.contains(1));
  grads.insert(1, Tensor::ones({3, 4}, DType::F64));  // a gradient for a frozen one is ignored
  grads.remove(2);                                    // fc1.bias: no gradient this step
  sgd.step(0.1, *model, grads);
  REQUIRE_THAT(params[0].value(), TensorNear(g.init[0], 0, 0));
  REQUIRE_THAT(params[1].value(), TensorNear(g.init[1], 0, 0));
  CHECK_FALSE(equal(params[2].value(), g.init[2]));
  CHECK(sgd.steps(1) == 0);
  CHECK(sgd.steps(2) == 0);
  CHECK(sgd.steps(3) == 1);
}

TEST_CASE("an optimizer refuses gradients that do not fit the model", "[optim]") {
  const Golden g = load_golden();
  auto model = make_model(g.init);
  Adam adam;
  GradientsParams unknown;
  unknown.insert(99, Tensor::zeros({2}, DType::F64));
  CHECK_THROWS_WITH(adam.step(0.1, *model, unknown),
                    Catch::Contains("ParamId 99, which the model does not have"));
  // Gradients of another model name its path and say how to fix it.
  Generator gen(1);
  nn::Linear other(3, 2, gen, {.dtype = DType::F64});
  nn::mse_loss(other.forward(Var(Tensor::ones({1, 3}, DType::F64))),
               Var(Tensor::zeros({1, 2}, DType::F64)))
      .backward();
  CHECK_THROWS_WITH(adam.step(0.1, *model, GradientsParams::from_module(other)),
                    Catch::Contains(str("ParamId ", nn::param_id_for_path("weight"),
                                        " ('weight'), which the model does not have")) &&
                        Catch::Contains("assign_param_ids(1) on every rank"));
  GradientsParams wrong_shape;
  wrong_shape.insert(1, Tensor::zeros({4, 3}, DType::F64));
  CHECK_THROWS_AS(adam.step(0.1, *model, wrong_shape), ShapeError);
  GradientsParams integer;
  integer.insert(2, Tensor::zeros({3}, DType::I64));
  CHECK_THROWS_AS(adam.step(0.1, *model, integer), DTypeError);
  CHECK_THROWS_AS(adam.step(-1.0, *model, GradientsParams()), ValueError);
  CHECK_THROWS_AS(Sgd({.momentum = 0.0, .nesterov = true}), ValueError);
  CHECK_THROWS_AS(Adam({.beta1 = 1.0}), ValueError);
}

TEST_CASE("an optimizer resumed from its saved state continues bit for bit", "[optim]") {
  const Golden g = load_golden();
  auto straight = make_model(g.init);
  auto resumed = make_model(g.init);
  AdamW a(AdamWOptions{0.85, 0.995, 1e-7, 0.2});
  for (int i = 0; i < 3; ++i) train_step(*straight, a, 0.02, g.x, g.y);
  // The resumed run: same first 3 steps, then a fresh optimizer loads the state.
  {
    AdamW first(AdamWOptions{0.85, 0.995, 1e-7, 0.2});
    for (int i = 0; i < 3; ++i) train_step(*resumed, first, 0.02, g.x, g.y);
    const OptimizerState saved = first.state();
    AdamW second(AdamWOptions{0.85, 0.995, 1e-7, 0.2});
    second.load_state(saved);
    for (int i = 0; i < 4; ++i) train_step(*resumed, second, 0.02, g.x, g.y);
  }
  for (int i = 0; i < 4; ++i) train_step(*straight, a, 0.02, g.x, g.y);
  const auto p = straight->parameters();
  const auto q = resumed->parameters();
  for (std::size_t i = 0; i < p.size(); ++i) {
    REQUIRE_THAT(q[i].value(), ruccl::testing::TensorEqual(p[i].value()));
  }
  Adam other;
  CHECK_THROWS_AS(other.load_state(a.state()), CheckpointError);  // adamw state into adam
  AdamW other_config;
  CHECK_THROWS_AS(other_config.load_state(a.state()), CheckpointError);
  // The refusal names every hyper-parameter that differs and both values.
  CHECK_THROWS_WITH(other_config.load_state(a.state()),
                    "adamw::load_state: the state was saved with other hyper-parameters: "
                    "expected beta1 0.85 (the record's), got 0.9; expected beta2 0.995 (the "
                    "record's), got 0.999; expected eps 1e-07 (the record's), got 1e-08; expected "
                    "weight_decay 0.2 (the record's), got 0.01");
  Sgd nesterov({.momentum = 0.9, .nesterov = true});
  CHECK_THROWS_WITH(Sgd({.momentum = 0.9}).load_state(nesterov.state()),
                    Catch::EndsWith("expected nesterov 1 (the record's), got 0"));
}

namespace {
// A model of two parameters "a" and "b".
struct TwoParams : nn::Cloneable<TwoParams> {
  TwoParams(nn::Param a, nn::Param b) {
    register_parameter("a", a);
    register_parameter("b", b);
  }
};
}  // namespace

TEST_CASE("an F32 parameter steps in F32 and an F16 one through F32 state", "[optim]") {
  nn::Param p32(1, Tensor::from_vector<float>({1.0f, -2.0f}));
  nn::Param p16(2, Tensor::from_vector<float>({1.0f, -2.0f}).to(DType::F16));
  TwoParams model(p32, p16);
  GradientsParams grads;
  grads.insert(1, Tensor::from_vector<float>({0.5f, 0.25f}));
  grads.insert(2, Tensor::from_vector<float>({0.5f, 0.25f}).to(DType::F16));
  Sgd sgd({.momentum = 0.5});
  sgd.step(0.5, model, grads);
  sgd.step(0.5, model, grads);
  // buf1 = g, p1 = p - 0.5 g; buf2 = 0.5 g + g = 1.5 g, p2 = p1 - 0.75 g = p - 1.25 g.
  const std::vector<float> expected = {1.0f - 0.625f, -2.0f - 0.3125f};
  CHECK(p32.value().to_vector<float>() == expected);
  CHECK(p16.dtype() == DType::F16);
  CHECK(p16.value().to(DType::F32).to_vector<float>() == expected);
}

TEST_CASE("step updates a contiguous CPU F32 parameter in place and replaces an F16 one's value",
          "[optim]") {
  nn::Param p32(1, Tensor::from_vector<float>({1.0f, -2.0f}));
  nn::Param p16(2, Tensor::from_vector<float>({1.0f, -2.0f}).to(DType::F16));
  TwoParams model(p32, p16);
  const Tensor old32 = p32.value();  // shares the parameter's storage
  const Tensor old16 = p16.value();
  GradientsParams grads;
  grads.insert(1, Tensor::from_vector<float>({0.5f, 0.25f}));
  grads.insert(2, Tensor::from_vector<float>({0.5f, 0.25f}).to(DType::F16));
  Sgd sgd;
  sgd.step(0.5, model, grads);
  const std::vector<float> expected = {0.75f, -2.125f};
  // In place: the old tensor is the parameter's storage and sees the update.
  CHECK(p32.value().storage() == old32.storage());
  CHECK(old32.to_vector<float>() == expected);
  // F16 is updated on an F32 copy that replaces the value: the old tensor keeps the old values.
  CHECK(p16.value().storage() != old16.storage());
  CHECK(p16.value().to(DType::F32).to_vector<float>() == expected);
  CHECK(old16.to(DType::F32).to_vector<float>() == std::vector<float>{1.0f, -2.0f});
}

namespace {

/// The gradient of sum(p^3) / 3 + sum(p) for each of `model`'s parameters: p^2 + 1, in its dtype.
GradientsParams cubic_grads(const nn::Module& model) {
  GradientsParams g;
  for (const nn::Param& p : model.parameters()) g.insert(p.id(), add(mul(p.value(), p.value()), 1));
  return g;
}

/// A two-parameter model with ids 1 and 2 holding `a` and `b` (converted to `dtype`): what
/// module.to(dtype) leaves, same ParamIds, other dtype.
TwoParams two_params(const Tensor& a, const Tensor& b, DType dtype) {
  return TwoParams(nn::Param(1, a.to(dtype).clone()), nn::Param(2, b.to(dtype).clone()));
}

}  // namespace

TEST_CASE("an optimizer's state follows its parameters to another dtype, values and steps kept",
          "[optim]") {
  const Tensor a0 = Tensor::from_vector<float>({0.5f, -1.25f, 2.0f});
  const Tensor b0 = Tensor::from_vector<float>({0.75f, -0.5f}, {2, 1});
  TwoParams f32 = two_params(a0, b0, DType::F32);
  AdamW adamw({.beta2 = 0.99});
  for (int i = 0; i < 3; ++i) adamw.step(0.1, f32, cubic_grads(f32));

  // The expected continuation: a fresh AdamW given the same state with its moments converted to
  // F64 by hand, stepping the F64 copy of the model.
  OptimizerState by_hand = adamw.state();
  for (auto& [id, slot] : by_hand.slots) {
    for (TensorBlob& b : slot.buffers) b = TensorBlob::from_tensor(b.to_tensor().to(DType::F64));
  }
  TwoParams expected = two_params(f32.param("a").value(), f32.param("b").value(), DType::F64);
  AdamW reference({.beta2 = 0.99});
  reference.load_state(by_hand);
  for (int i = 0; i < 2; ++i) reference.step(0.1, expected, cubic_grads(expected));

  SECTION("with to(DType)") {
    TwoParams f64 = two_params(f32.param("a").value(), f32.param("b").value(), DType::F64);
    adamw.to(DType::F64);
    for (const auto& [id, slot] : adamw.state().slots) {
      CHECK(slot.steps == 3);
      for (const TensorBlob& b : slot.buffers) CHECK(b.dtype_value() == DType::F64);
    }
    for (int i = 0; i < 2; ++i) adamw.step(0.1, f64, cubic_grads(f64));
    REQUIRE_THAT(f64.param("a").value(), TensorEqual(expected.param("a").value()));
    REQUIRE_THAT(f64.param("b").value(), TensorEqual(expected.param("b").value()));
  }
  SECTION("step converts the state by itself when to(DType) was not called") {
    TwoParams f64 = two_params(f32.param("a").value(), f32.param("b").value(), DType::F64);
    for (int i = 0; i < 2; ++i) adamw.step(0.1, f64, cubic_grads(f64));
    CHECK(adamw.steps(1) == 5);
    REQUIRE_THAT(f64.param("a").value(), TensorEqual(expected.param("a").value()));
    REQUIRE_THAT(f64.param("b").value(), TensorEqual(expected.param("b").value()));
  }
  SECTION("F16 and BF16 parameters keep F32 state; back to F32 from F64") {
    adamw.to(DType::F64).to(DType::F16);
    for (const auto& [id, slot] : adamw.state().slots) {
      for (const TensorBlob& b : slot.buffers) CHECK(b.dtype_value() == DType::F32);
    }
    adamw.to(DType::BF16);
    CHECK(adamw.state().slots.at(1).buffers[0].dtype_value() == DType::F32);
    CHECK_THROWS_WITH(adamw.to(DType::I64), "adamw::to: expected a floating dtype, got I64");
  }
}

TEST_CASE("step updates a device parameter on its own backend with its state kept there",
          "[optim]") {
  // A stand-in device (host memory behind a counting backend) registered for CUDA: the update and
  // the optimizer state stay on the device, and the values equal the CPU run's bits.
  testing::HostDeviceBackend device;
  testing::BackendRegistration registration(DeviceType::CUDA, &device);
  const Tensor a0 = Tensor::from_vector<float>({0.5f, -1.25f, 2.0f});
  const Tensor b0 = Tensor::from_vector<double>({0.75, -0.5}, {2, 1});
  TwoParams on_cpu(nn::Param(1, a0.clone()), nn::Param(2, b0.clone()));
  TwoParams on_device(nn::Param(1, a0.to(Device::cuda(0))), nn::Param(2, b0.to(Device::cuda(0))));
  AdamW cpu_opt;
  AdamW device_opt;
  Sgd cpu_sgd({.momentum = 0.9, .nesterov = true});
  Sgd device_sgd({.momentum = 0.9, .nesterov = true});
  const Tensor a_storage = on_device.parameters()[0].value();
  const int transfers = device.to_host + device.from_host;
  for (int step = 0; step < 3; ++step) {
    cpu_opt.step(0.1, on_cpu, cubic_grads(on_cpu));
    device_opt.step(0.1, on_device, cubic_grads(on_device));
    cpu_sgd.step(0.05, on_cpu, cubic_grads(on_cpu));
    device_sgd.step(0.05, on_device, cubic_grads(on_device));
  }
  REQUIRE(device.to_host + device.from_host == transfers);  // nothing crossed to the host
  REQUIRE(device.optimizer_updates == 12);                  // 2 params x 2 optimizers x 3 steps
  REQUIRE(on_device.parameters()[0].value().storage() == a_storage.storage());  // in place
  // Saving reads the state from the device: exp_avg and exp_avg_sq of both parameters.
  const int read_before = device.to_host;
  const OptimizerState saved = device_opt.state();
  REQUIRE(device.to_host - read_before == 4);
  const auto p = on_cpu.parameters();
  const auto q = on_device.parameters();
  for (std::size_t i = 0; i < p.size(); ++i) {
    REQUIRE(q[i].value().device() == Device::cuda(0));
    REQUIRE_THAT(q[i].value().to(Device::cpu()), TensorEqual(p[i].value()));
  }
}
