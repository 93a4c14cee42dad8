// Modules whose forward takes other arguments than one Var, called through their handles, next
// to one-Var modules in a Sequential.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;

namespace {

Tensor f64(std::vector<double> v, const Shape& s) { return Tensor::from_vector<double>(v, s); }

/// A masked layer: forward(x, mask) zeroes the masked outputs; forward(x) (what Sequential calls)
/// masks nothing.
class MaskedLinear : public nn::Cloneable<MaskedLinear> {
 public:
  explicit MaskedLinear(Generator& gen)
      : fc(register_module("fc", nn::Linear(3, 2, gen, {.dtype = DType::F64}))) {}
  Var forward(const Var& x) override { return fc->forward(x); }
  Var forward(const Var& x, const Var& mask) { return mul(fc->forward(x), mask); }
  nn::ModuleHandle<nn::Linear> fc;
};

/// Only a two-argument forward (token ids and a per-token weight): not for Sequential.
class WeightedBag : public nn::Cloneable<WeightedBag> {
 public:
  explicit WeightedBag(Generator& gen)
      : emb(register_module("emb", nn::Embedding(6, 3, gen, {.dtype = DType::F64}))) {}
  /// ids [n] (I64), weights [n, 1] -> [3]: the weighted sum of the ids' rows.
  Var forward(const Tensor& ids, const Var& weights) { return sum(mul(emb(ids), weights), 0); }
  nn::ModuleHandle<nn::Embedding> emb;
};

/// Uses both through their handles, and returns two results.
class Model : public nn::Cloneable<Model> {
 public:
  explicit Model(Generator& gen)
      : masked(register_module("masked", MaskedLinear(gen))),
        bag(register_module("bag", WeightedBag(gen))) {}
  std::pair<Var, Var> forward(const Var& x, const Var& mask, const Tensor& ids, const Var& w) {
    return {masked->forward(x, mask), bag(ids, w)};
  }
  nn::ModuleHandle<MaskedLinear> masked;
  nn::ModuleHandle<WeightedBag> bag;
};

}  // namespace

TEST_CASE("a module's forward may take several inputs and is called through its handle",
          "[autodiff]") {
  Generator gen(1);
  Model model(gen);
  const Var x(f64({0.5, -1, 2, 1, 0.25, -0.5}, {2, 3}));
  const Var mask(f64({1, 0, 0, 1}, {2, 2}));
  const Tensor ids = Tensor::from_vector<std::int64_t>({4, 0, 4}, {3});
  const Var w(f64({0.5, 2, -1}, {3, 1}));

  const auto [masked, bag] = model.forward(x, mask, ids, w);
  const Tensor y = model.masked->fc->forward(x).value();
  CHECK_THAT(masked.value(), TensorEqual(ruccl::mul(y, mask.value())));
  const Tensor rows = model.bag->emb->weight().value();
  // Rows 4, 0, 4 weighted 0.5, 2, -1, summed in that order.
  const Tensor r0 = rows.select(0, 0), r4 = rows.select(0, 4);
  CHECK_THAT(bag.value(),
             TensorEqual(ruccl::add(ruccl::add(ruccl::mul(r4, 0.5), ruccl::mul(r0, 2.0)),
                                    ruccl::mul(r4, -1.0))));

  // Gradients reach the parameters through every input.
  sum(add(sum(masked), sum(bag))).backward();
  const Tensor emb_grad = model.bag->emb->weight().grad();
  CHECK(emb_grad.to_vector<double>()[0] == 2.0);  // d/d row0[0] = 2
  CHECK(emb_grad.to_vector<double>()[12] == -0.5);
  CHECK(model.masked->fc->bias().grad().to_vector<double>() == std::vector<double>{1, 1});

  // The clone's handles call the clone's modules with the same several inputs.
  auto replica = model.clone_as<Model>();
  CHECK_THAT(replica->forward(x, mask, ids, w).first.value(), TensorEqual(masked.value()));
}

TEST_CASE("Sequential runs one-Var modules next to modules with more forward overloads",
          "[autodiff]") {
  Generator gen(2);
  nn::Sequential seq;
  auto masked = seq.push_back(MaskedLinear(gen));
  seq.push_back(nn::Tanh());
  const Var x(f64({0.5, -1, 2, 1, 0.25, -0.5}, {2, 3}));
  CHECK_THAT(seq.forward(x).value(), TensorEqual(tanh(masked->forward(x)).value()));
  CHECK_THAT(seq(x).value(), TensorEqual(tanh(masked(x)).value()));

  // A module with no one-Var forward says so when Sequential calls it.
  seq.push_back(WeightedBag(gen));
  CHECK_THROWS_AS(seq.forward(x), NotImplementedError);
  CHECK_THROWS_WITH(seq.forward(x), Catch::Matchers::StartsWith(
                                        "2 (WeightedBag): forward(const Var&) is not implemented"));
}
