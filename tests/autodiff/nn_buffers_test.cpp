// Module buffers (register_buffer, buffers, named_buffers, buffer, set_buffer): not trained, moved
// and converted by to(), deep-copied by clone(); and the training / evaluation modes.
#include <catch2/catch.hpp>

#include <string>

#include "autodiff/autodiff.h"
#include "autodiff/nn/nn.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using autodiff::Var;
using ruccl::testing::TensorEqual;

namespace {

// A module with a parameter, a floating buffer (a mask) and an integer buffer (a counter).
class Masked : public nn::Cloneable<Masked> {
 public:
  Masked()
      : weight_(register_parameter("weight", nn::Param(Tensor::ones({3})))),
        mask_(register_buffer("mask", Tensor::from_vector<float>({1, 0, 1}, {3}))),
        calls_(register_buffer("calls", Tensor::zeros({}, DType::I64))) {}
  Var forward(const Var& x) override {
    buffer_at(calls_).add_(1);
    return x * param_at(weight_).var() * Var(buffer_at(mask_));
  }

 private:
  std::size_t weight_, mask_, calls_;
};

class Net : public nn::Cloneable<Net> {
 public:
  Net()
      : a(register_module("a", Masked())),
        bn(register_module("bn", nn::BatchNorm1d(3))),
        drop(register_module("drop", nn::Dropout(0.5, 7))) {}
  Var forward(const Var& x) override { return drop(bn(a(x))); }
  nn::ModuleHandle<Masked> a;
  nn::ModuleHandle<nn::BatchNorm1d> bn;
  nn::ModuleHandle<nn::Dropout> drop;
};

std::vector<std::string> paths(const std::vector<std::pair<std::string, Tensor>>& named) {
  std::vector<std::string> out;
  for (const auto& [path, t] : named) out.push_back(path);
  return out;
}

}  // namespace

TEST_CASE("named_buffers lists every buffer once with dotted paths, apart from the parameters",
          "[autodiff][nn]") {
  Net net;
  CHECK(paths(net.named_buffers()) == std::vector<std::string>{"a.mask", "a.calls",
                                                               "bn.running_mean", "bn.running_var",
                                                               "bn.num_batches_tracked"});
  CHECK(net.buffers().size() == 5);
  for (const auto& [path, p] : net.named_parameters()) {
    CHECK(path.find("mask") == std::string::npos);
    CHECK(path.find("running") == std::string::npos);
  }
  // A sub-module registered twice lists its buffers once, at its first path.
  class Twice : public nn::Cloneable<Twice> {
   public:
    Twice() {
      auto shared = std::make_shared<Masked>();
      register_module("first", shared);
      register_module("second", shared);
    }
  } twice;
  CHECK(paths(twice.named_buffers()) == std::vector<std::string>{"first.mask", "first.calls"});
  // A buffer shares storage with the module's: forward's in-place update shows through.
  const Tensor calls = net.buffer("a.calls");
  net.forward(Tensor::ones({4, 3}));
  CHECK(calls.item<std::int64_t>() == 1);
  CHECK_THROWS_AS(net.buffer("a.nope"), ValueError);
}

TEST_CASE("buffers get no gradient and are not trained", "[autodiff][nn]") {
  Masked m;
  Var y = m.forward(Var(Tensor::ones({2, 3}), true));
  y.sum().backward();
  CHECK(m.parameters().size() == 1);
  CHECK(m.param("weight").grad().defined());
  CHECK_THAT(m.buffer("mask"), TensorEqual(Tensor::from_vector<float>({1, 0, 1}, {3})));
}

TEST_CASE("set_buffer replaces a buffer and refuses another shape, dtype or an unknown path",
          "[autodiff][nn]") {
  Net net;
  net.set_buffer("bn.running_mean", Tensor::full({3}, 2.0));
  CHECK_THAT(net.bn->running_mean(), TensorEqual(Tensor::full({3}, 2.0)));
  CHECK_THROWS_AS(net.set_buffer("bn.running_mean", Tensor::zeros({4})), ShapeError);
  CHECK_THROWS_AS(net.set_buffer("bn.running_mean", Tensor::zeros({3}, DType::F64)), DTypeError);
  CHECK_THROWS_AS(net.set_buffer("bn.nope", Tensor::zeros({3})), ValueError);
  CHECK_THROWS_AS(net.set_buffer("bn.running_mean", Tensor()), ValueError);
}

TEST_CASE("register_buffer refuses an undefined tensor and a name already taken",
          "[autodiff][nn]") {
  class Bad : public nn::Cloneable<Bad> {
   public:
    explicit Bad(int which) {
      register_parameter("w", nn::Param(Tensor::ones({1})));
      if (which == 0) register_buffer("b", Tensor());
      if (which == 1) register_buffer("w", Tensor::ones({1}));
      if (which == 2) {
        register_buffer("b", Tensor::ones({1}));
        register_buffer("b", Tensor::ones({1}));
      }
      if (which == 3) register_buffer("a.b", Tensor::ones({1}));
    }
  };
  for (int which = 0; which < 4; ++which) CHECK_THROWS_AS(Bad(which), ValueError);
}

TEST_CASE("to(DType) converts floating buffers and keeps integer ones; clone() copies buffers",
          "[autodiff][nn]") {
  Net net;
  net.to(DType::F64);
  CHECK(net.buffer("a.mask").dtype() == DType::F64);
  CHECK(net.buffer("bn.running_var").dtype() == DType::F64);
  CHECK(net.buffer("a.calls").dtype() == DType::I64);
  CHECK(net.bn->running_var().dtype() == DType::F64);  // the layer reads the converted one
  net.to(Device::cpu());
  CHECK(net.buffer("a.mask").device() == Device::cpu());

  auto replica = net.clone_as<Net>();
  net.bn->running_mean().fill_(5.0);  // the original's buffer, in place
  CHECK_THAT(replica->buffer("bn.running_mean"), TensorEqual(Tensor::zeros({3}, DType::F64)));
  replica->forward(Tensor::ones({2, 3}, DType::F64));
  CHECK(net.buffer("a.calls").item<std::int64_t>() == 0);
  CHECK(replica->buffer("a.calls").item<std::int64_t>() == 1);
}

TEST_CASE("train() and eval() switch every sub-module: Dropout and BatchNorm follow",
          "[autodiff][nn]") {
  Net net;
  CHECK(net.is_training());
  Generator gen(3);
  const Tensor x = Tensor::randn({4, 3}, gen);
  net.eval();
  CHECK_FALSE(net.is_training());
  CHECK_FALSE(net.a->is_training());
  CHECK_FALSE(net.bn->is_training());
  CHECK_FALSE(net.drop->is_training());
  // Evaluation mode: dropout is the identity and BatchNorm uses its (initial) running stats, so
  // the output is a(x) / sqrt(1 + eps).
  const Tensor expected = ruccl::div(net.a->forward(x).value(), std::sqrt(1.0 + 1e-5));
  CHECK_THAT(net.forward(x).value(), testing::TensorNear(expected, 1e-6, 1e-7));
  CHECK(net.bn->num_batches_tracked().item<std::int64_t>() == 0);
  net.train();
  CHECK(net.drop->is_training());
  net.forward(x);
  CHECK(net.bn->num_batches_tracked().item<std::int64_t>() == 1);
}
