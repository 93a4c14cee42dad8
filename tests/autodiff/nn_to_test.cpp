// Layer options by name, and Module::to(DType / Device): conversion in place, keeping every Param.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::nn::Param;
using ruccl::testing::TensorEqual;

TEST_CASE("layer options are named and keep the defaults a designated initializer omits",
          "[autodiff]") {
  Generator gen(1);
  nn::Linear no_bias(16, 32, gen, {.bias = false});
  CHECK_FALSE(no_bias.has_bias());
  CHECK(no_bias.weight().dtype() == DType::F32);  // not reset by naming only .bias
  nn::Linear wide(16, 32, gen, {.dtype = DType::F64});
  CHECK(wide.has_bias());
  CHECK(wide.weight().dtype() == DType::F64);
  CHECK(wide.bias().dtype() == DType::F64);
  nn::Linear both(3, 2, gen, {.bias = false, .dtype = DType::F64});
  CHECK_FALSE(both.has_bias());
  CHECK(both.weight().dtype() == DType::F64);

  nn::LayerNorm ln(8, {.dtype = DType::F64});
  CHECK(ln.eps() == 1e-5);
  CHECK(ln.elementwise_affine());
  CHECK(ln.weight().dtype() == DType::F64);
  nn::LayerNorm plain({2, 4}, {.eps = 1e-3, .elementwise_affine = false});
  CHECK(plain.eps() == 1e-3);
  CHECK(plain.named_parameters().empty());

  nn::Embedding emb(10, 4, gen, {.dtype = DType::F64});
  CHECK(emb.weight().dtype() == DType::F64);
  CHECK_THROWS_WITH(nn::Linear(2, 2, gen, {.dtype = DType::I64}),
                    "Linear: expected a floating dtype, got I64");
  CHECK_THROWS_AS(nn::LayerNorm(2, {.dtype = DType::Bool}), DTypeError);
  CHECK_THROWS_AS(nn::Embedding(2, 2, gen, {.dtype = DType::I32}), DTypeError);
}

namespace {
/// Linear, Dropout, Linear with the second weight tied to the first and the last bias frozen,
/// plus an integer parameter (a lookup table of class ids, say) that to(DType) must leave alone.
class Model : public nn::Cloneable<Model> {
 public:
  explicit Model(Generator& gen)
      : a(register_module("a", nn::Linear(3, 3, gen))),
        drop(register_module("drop", nn::Dropout(0.25, 7))),
        b(register_module("b", nn::Linear(3, 3, gen))) {
    register_parameter("ids", Param(Tensor::from_vector<std::int64_t>({3, 1, 2}), false));
    set_param("b.weight", param("a.weight"));
    b->bias().set_trainable(false);
  }
  Var forward(const Var& x) override { return b(drop(a(x))); }
  nn::ModuleHandle<nn::Linear> a;
  nn::ModuleHandle<nn::Dropout> drop;
  nn::ModuleHandle<nn::Linear> b;
};
}  // namespace

TEST_CASE("Module::to(DType) converts parameters in place and keeps ids ties flags and generators",
          "[autodiff]") {
  Generator gen(2);
  Model model(gen);
  const auto before = model.named_parameters(true);
  std::vector<Tensor> values;
  for (const auto& [path, p] : before) values.push_back(p.value());
  Var x(Tensor::from_vector<float>({1, -2, 0.5f}, {1, 3}));
  sum(model.forward(x)).backward();  // gradients, to be converted too
  const Tensor grad = model.a->weight().grad();
  const Generator::State state = model.drop->generator().state();
  const Tensor weight = model.a->weight().value();

  model.to(DType::F64);
  const auto after = model.named_parameters(true);
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    INFO(after[i].first);
    CHECK(after[i].first == before[i].first);
    CHECK(after[i].second.same(before[i].second));  // the same Param: every handle sees it
    CHECK(after[i].second.id() == before[i].second.id());
    CHECK(after[i].second.trainable() == before[i].second.trainable());
    const DType want = after[i].first == "ids" ? DType::I64 : DType::F64;
    CHECK_THAT(after[i].second.value(), TensorEqual(values[i].to(want)));  // F32 -> F64 exact
  }
  CHECK(model.aliases().size() == 1);
  CHECK(model.a->weight().same(model.b->weight()));
  CHECK_FALSE(model.b->bias().trainable());
  CHECK_THAT(model.a->weight().grad(), TensorEqual(grad.to(DType::F64)));
  CHECK(model.drop->generator().state() == state);
  model.zero_grad();
  sum(model.forward(Var(x.value().to(DType::F64)))).backward();
  CHECK(model.a->weight().grad().dtype() == DType::F64);

  // And back: F64 -> F32 of values that came from F32 is exact.
  model.to(DType::F32);
  CHECK_THAT(model.a->weight().value(), TensorEqual(weight));
  CHECK_THROWS_WITH(model.to(DType::I64),
                    "Module::to: expected a floating dtype (F16, BF16, F32, F64), got I64");
}

TEST_CASE("Module::to(Device) keeps every Param and value", "[autodiff]") {
  Generator gen(3);
  nn::Linear fc(2, 2, gen);
  const Param w = fc.weight();
  const Tensor value = w.value();
  fc.to(Device::cpu());
  CHECK(fc.weight().same(w));
  CHECK(fc.weight().value().device() == Device::cpu());
  CHECK_THAT(fc.weight().value(), TensorEqual(value));
}
