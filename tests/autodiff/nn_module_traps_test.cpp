// Three traps of writing modules, each once silent: a Param member copied by clone() kept pointing
// at the original's parameter; model(x) on a module whose forward takes a Tensor compiled and
// threw at run time; param.value().fill_(x) did not compile (constness).
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include "autodiff/autodiff.h"
#include "autodiff/nn/nn.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using autodiff::Var;
using ruccl::testing::TensorEqual;

namespace {

// The libtorch habit: the parameter kept as a member beside its registration.
class Scale : public nn::Cloneable<Scale> {
 public:
  Scale() : w(Tensor::full({2}, 3.0)) { register_parameter("w", w); }
  Var forward(const Var& x) override { return x * w.var(); }
  nn::Param w;
};

// A module with a Param member that is registered nowhere: clone() cannot give the replica its
// own, so it refuses.
class Foreign : public nn::Cloneable<Foreign> {
 public:
  explicit Foreign(nn::Param p) : shared(std::move(p)) {}
  Var forward(const Var& x) override { return x * shared.var(); }
  nn::Param shared;
};

// forward takes token ids (a Tensor), as the classifier of docs/models.md.
class Tokens : public nn::Cloneable<Tokens> {
 public:
  Tokens() : emb(register_module("emb", nn::Embedding(10, 4))) {}
  Var forward(const Tensor& ids) { return emb(ids); }
  nn::ModuleHandle<nn::Embedding> emb;
};

// Two inputs, with the one-input forward kept visible but not overridden.
class TwoInputs : public nn::Cloneable<TwoInputs> {
 public:
  Var forward(const Var& x, const Var& y) { return x + y; }
  using nn::Module::forward;
};

class Doubler : public nn::Cloneable<Doubler> {
 public:
  Var forward(const Var& x) override { return x * 2.0; }
};

}  // namespace

TEST_CASE("clone() re-seats a Param member on the replica's own parameter", "[autodiff][nn]") {
  Scale original;
  auto replica = original.clone_as<Scale>();
  CHECK(replica->w.same(replica->param("w")));  // the member is the registered copy
  CHECK_FALSE(replica->w.same(original.w));
  // A "best model" snapshot no longer follows the original's training.
  original.w.value().fill_(-1.0);
  const Tensor y = replica->forward(Tensor::ones({2})).value();
  CHECK_THAT(y, TensorEqual(Tensor::full({2}, 3.0)));
  // The replica's gradient lands on its own registered parameter.
  replica->forward(Var(Tensor::ones({2}))).sum().backward();
  CHECK(replica->param("w").grad().defined());
  CHECK_FALSE(original.w.grad().defined());
  // Inside a tree too (a Sequential of them), and twice over.
  nn::Sequential seq{Scale(), Scale()};
  auto copy = seq.clone_as<nn::Sequential>();
  auto twice = copy->clone_as<nn::Sequential>();
  CHECK(twice->at<Scale>(1).w.same(twice->param("1.w")));
  CHECK_FALSE(twice->at<Scale>(1).w.same(copy->param("1.w")));
}

TEST_CASE("clone() refuses a Param member registered nowhere in the model, naming the module",
          "[autodiff][nn]") {
  nn::Sequential seq{Doubler(), Foreign(nn::Param(Tensor::ones({2})))};
  std::string message;
  try {
    seq.clone();
  } catch (const ValueError& e) {
    message = e.what();
  }
  CHECK(message.find("Module::clone: 1 (Foreign) holds a Param member that is not registered") !=
        std::string::npos);
}

TEST_CASE("model(x) resolves against the module's own forward at compile time", "[autodiff][nn]") {
  // The wrong uses do not compile (they once threw NotImplementedError at run time):
  static_assert(!std::is_invocable_v<Tokens&, Var>, "a Var into a forward that takes a Tensor");
  static_assert(!std::is_invocable_v<nn::ModuleHandle<Tokens>&, Var>);
  static_assert(!nn::detail::kCallableModule<TwoInputs, Var>,
                "one argument, only Module's default forward(const Var&) takes it");
  static_assert(!nn::detail::kCallableModule<TwoInputs, Tensor>, "a Tensor converts to the Var");
  // The right ones do, and run the forward the module declares.
  static_assert(nn::detail::kCallableModule<Tokens, Tensor>);
  static_assert(nn::detail::kCallableModule<TwoInputs, Var, Var>);
  static_assert(nn::detail::kCallableModule<Doubler, Var>);
  static_assert(nn::detail::kCallableModule<Doubler, Tensor>);
  static_assert(nn::detail::kCallableModule<nn::Linear, Tensor>);

  Tokens model;
  const Tensor ids = Tensor::from_vector<std::int64_t>({1, 2, 3}, {3});
  CHECK(model(ids).shape() == Shape{3, 4});  // forward(const Tensor&), not Module's default
  nn::ModuleHandle<Tokens> handle(std::make_shared<Tokens>());
  CHECK(handle(ids).shape() == Shape{3, 4});
  TwoInputs two;
  CHECK_THAT(two(Tensor::ones({2}), Tensor::ones({2})).value(),
             TensorEqual(Tensor::full({2}, 2.0)));
}

TEST_CASE("a parameter's value is filled and copied in place through param.value()",
          "[autodiff][nn]") {
  nn::Linear fc(3, 2);
  fc.weight().value().fill_(0.5);
  fc.bias().value().copy_(Tensor::from_vector<float>({1, -1}, {2}));
  CHECK_THAT(fc.weight().value(), TensorEqual(Tensor::full({2, 3}, 0.5)));
  // Every handle of the parameter sees it: the value is the parameter's own storage.
  const nn::Param bias = fc.param("bias");
  CHECK_THAT(bias.value(), TensorEqual(Tensor::from_vector<float>({1, -1}, {2})));
  for (const nn::Param& p : fc.parameters()) p.value().fill_(0.0);  // a const Param too
  CHECK_THAT(fc(Tensor::ones({1, 3})).value(), TensorEqual(Tensor::zeros({1, 2})));
}
