// ruccl::nn::Module as a user writes one: typed sub-module handles, and clones that compute with
// their own parameters.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::testing::TensorEqual;

namespace {

Tensor f64(std::vector<double> v, const Shape& s) { return Tensor::from_vector<double>(v, s); }

/// Two layers reached through the handles register_module returns.
class Mlp : public nn::Cloneable<Mlp> {
 public:
  explicit Mlp(Generator& gen)
      : fc1(register_module("fc1", nn::Linear(3, 4, gen, {.dtype = DType::F64}))),
        fc2(register_module("fc2", nn::Linear(4, 2, gen, {.dtype = DType::F64}))) {}
  Var forward(const Var& x) override { return fc2->forward(tanh(fc1->forward(x))); }

  nn::ModuleHandle<nn::Linear> fc1;
  nn::ModuleHandle<nn::Linear> fc2;
};

/// A module holding a handle to a sub-module of its sub-module (and one registered by
/// shared_ptr): every handle into the tree must follow a clone.
class Outer : public nn::Cloneable<Outer> {
 public:
  explicit Outer(Generator& gen)
      : mlp(register_module("mlp", std::make_shared<Mlp>(gen))),
        head(mlp->fc2),
        norm(register_module("norm", nn::LayerNorm(2, {.dtype = DType::F64}))) {}
  Var forward(const Var& x) override { return norm(head(tanh(mlp->fc1(x)))); }

  nn::ModuleHandle<Mlp> mlp;
  nn::ModuleHandle<nn::Linear> head;
  nn::ModuleHandle<nn::LayerNorm> norm;
};

Var input() { return Var(f64({0.5, -1, 2, 1, 0.25, -0.5}, {2, 3})); }

void scale_all(nn::Module& m, double factor) {
  for (auto& p : m.parameters()) p.set_value(mul(p.value(), factor));
}

}  // namespace

TEST_CASE("register_module returns a typed handle that reaches the registered module",
          "[autodiff]") {
  Generator gen(1);
  Mlp m(gen);
  CHECK(m.fc1->in_features() == 3);
  CHECK(m.fc2->out_features() == 2);
  // The handle and child() are the same module; the parameters are the model's.
  CHECK(m.child("fc1").get() == m.fc1.get());
  CHECK(m.param("fc2.weight").same(m.fc2->weight()));
  CHECK_THAT(m.fc1(input()).value(), TensorEqual(m.fc1->forward(input()).value()));
}

TEST_CASE("a clone's handles use the clone's sub-modules, not the original's", "[autodiff]") {
  Generator gen(2);
  Mlp original(gen);
  auto replica = original.clone_as<Mlp>();
  const Tensor before = replica->forward(input()).value();
  CHECK_THAT(before, TensorEqual(original.forward(input()).value()));
  CHECK(replica->fc1.get() == replica->child("fc1").get());
  CHECK(replica->fc1.get() != original.fc1.get());

  scale_all(original, 2.0);  // changes every weight of the original only
  CHECK_FALSE(ruccl::equal(original.forward(input()).value(), before));
  CHECK_THAT(replica->forward(input()).value(), TensorEqual(before));

  // And the other way round: training the replica leaves the original alone.
  const Tensor original_out = original.forward(input()).value();
  replica->fc2->weight().set_value(Tensor::zeros({2, 4}, DType::F64));
  CHECK_THAT(original.forward(input()).value(), TensorEqual(original_out));
}

TEST_CASE("a clone re-seats handles to nested sub-modules and keeps shared ones shared",
          "[autodiff]") {
  Generator gen(3);
  Outer original(gen);
  auto replica = original.clone_as<Outer>();
  CHECK(replica->head.get() == replica->mlp->fc2.get());
  CHECK(replica->head.get() != original.head.get());
  CHECK(replica->norm.get() == replica->child("norm").get());
  const Tensor before = replica->forward(input()).value();
  scale_all(original, -1.5);
  CHECK_THAT(replica->forward(input()).value(), TensorEqual(before));

  // One sub-module registered at two places is one module in the clone too.
  class Shared : public nn::Cloneable<Shared> {
   public:
    explicit Shared(Generator& g) : a(register_module("a", nn::Linear(2, 2, g))) {
      b = register_module("b", a);
    }
    nn::ModuleHandle<nn::Linear> a, b;
  };
  Shared shared(gen);
  auto copy = shared.clone_as<Shared>();
  CHECK(copy->a.get() == copy->b.get());
  CHECK(copy->a.get() == copy->child("b").get());
  CHECK(copy->a.get() != shared.a.get());
}

TEST_CASE("register_module keeps taking shared_ptrs and child_at<M> checks the type",
          "[autodiff]") {
  class ByIndex : public nn::Cloneable<ByIndex> {
   public:
    explicit ByIndex(Generator& g) {
      register_module("fc", std::make_shared<nn::Linear>(2, 3, g));
      register_module("act", std::make_shared<nn::ReLU>());
    }
    nn::Linear& fc() { return child_at<nn::Linear>(0); }
    nn::Linear& wrong() { return child_at<nn::Linear>(1); }
  };
  Generator gen(4);
  ByIndex m(gen);
  CHECK(m.fc().out_features() == 3);
  CHECK(&m.fc() == m.child("fc").get());
  CHECK_THROWS_WITH(m.wrong(),
                    "Module::child_at: sub-module 'act' is a ReLU, not the requested Linear");
  CHECK_THROWS_WITH(
      nn::ModuleHandle<nn::Linear>()->in_features(),
      Catch::Matchers::StartsWith("ModuleHandle<Linear>: expected a handle to a module, got an "
                                  "empty one"));
  nn::Sequential seq;
  seq.push_back(std::make_shared<nn::Tanh>());
  CHECK_THROWS_WITH(seq.at<nn::Linear>(0),
                    "Module::child_at: sub-module '0' is a Tanh, not the requested Linear");
}

TEST_CASE("Sequential takes modules by value and hands back typed handles", "[autodiff]") {
  Generator gen(5);
  nn::Sequential seq;
  nn::ModuleHandle<nn::Linear> first = seq.push_back(nn::Linear(3, 4, gen, {.dtype = DType::F64}));
  seq.push_back(nn::Tanh());
  nn::ModuleHandle<nn::Linear> last = seq.push_back(nn::Linear(4, 2, gen, {.dtype = DType::F64}));
  CHECK(seq.size() == 3);
  CHECK(first.get() == &seq.at<nn::Linear>(0));
  CHECK(last.get() == &seq.at<nn::Linear>(2));
  const Var y = seq.forward(input());
  CHECK_THAT(y.value(), TensorEqual(last(tanh(first(input()))).value()));
  // A handle converts to the shared_ptr Sequential's vector constructor takes.
  nn::Sequential again(std::vector<std::shared_ptr<nn::Module>>{first, last});
  CHECK(again.child("0").get() == first.get());
}

TEST_CASE("Sequential is built from modules by value, as libtorch's", "[autodiff]") {
  Generator gen(6);
  nn::Sequential seq{nn::Linear(3, 4, gen, {.dtype = DType::F64}), nn::Tanh(),
                     nn::Linear(4, 2, gen, {.dtype = DType::F64})};
  REQUIRE(seq.size() == 3);
  CHECK(seq.child("1")->type_name() == "Tanh");
  CHECK(seq.at<nn::Linear>(2).path() == "2");
  const Var y = seq.forward(input());
  CHECK_THAT(
      y.value(),
      TensorEqual(
          seq.at<nn::Linear>(2).forward(tanh(seq.at<nn::Linear>(0).forward(input()))).value()));
  // One Sequential alone copies (sharing the modules), it does not nest.
  nn::Sequential copy(seq);
  CHECK(copy.size() == 3);
  CHECK(copy.child("0").get() == seq.child("0").get());
}
