// Layer errors name the module: its dotted path in the model and its type.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"

using namespace ruccl;
using namespace ruccl::autodiff;

namespace {

Var zeros(const Shape& shape, DType dtype = DType::F32) { return Var(Tensor::zeros(shape, dtype)); }
Tensor ids(std::vector<std::int64_t> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor::from_vector<std::int64_t>(v, {n});
}

/// Embedding -> mean -> LayerNorm -> Linear -> GELU -> Linear, the model, with handles.
class Classifier : public nn::Cloneable<Classifier> {
 public:
  explicit Classifier(Generator& gen)
      : emb(register_module("emb", nn::Embedding(10, 16, gen))),
        norm(register_module("norm", nn::LayerNorm(16))),
        fc1(register_module("fc1", nn::Linear(16, 32, gen))),
        fc2(register_module("fc2", nn::Linear(32, 4, gen))) {}
  Var forward(const Tensor& tokens) {
    return fc2(gelu(fc1(norm(mean(emb(tokens), 0, /*keepdim=*/true)))));
  }
  nn::ModuleHandle<nn::Embedding> emb;
  nn::ModuleHandle<nn::LayerNorm> norm;
  nn::ModuleHandle<nn::Linear> fc1, fc2;
};

/// A model holding a Sequential and a Classifier, to check nested paths.
class Outer : public nn::Cloneable<Outer> {
 public:
  explicit Outer(Generator& gen)
      : encoder(register_module("encoder", Classifier(gen))),
        body(register_module("body", nn::Sequential())) {
    body->push_back(nn::LayerNorm(std::vector<std::int64_t>{2, 3}));
    body->push_back(nn::Linear(3, 5, gen));
  }
  nn::ModuleHandle<Classifier> encoder;
  nn::ModuleHandle<nn::Sequential> body;
};

}  // namespace

TEST_CASE("a top-level layer's errors are named by its type", "[autodiff]") {
  Generator gen(1);
  nn::Linear fc(32, 4, gen);
  CHECK(fc.path().empty());
  CHECK(fc.describe() == "Linear");
  CHECK_THROWS_WITH(fc.forward(zeros({4, 16})),
                    "Linear: expected an input whose last dim is 32, got [4, 16]");
  CHECK_THROWS_AS(fc.forward(zeros({4, 16})), ShapeError);
  CHECK_THROWS_WITH(fc.forward(zeros({})),
                    "Linear: expected an input whose last dim is 32, got []");
  CHECK_THROWS_WITH(fc.forward(zeros({4, 32}, DType::F64)),
                    "Linear: expected an input of dtype F32 (the parameters'), got F64");
  CHECK_THROWS_AS(fc.forward(zeros({4, 32}, DType::F64)), DTypeError);
  nn::LayerNorm ln(8);
  CHECK_THROWS_WITH(ln.forward(zeros({2, 4})),
                    "LayerNorm: expected an input whose last dim is 8, got [2, 4]");
}

TEST_CASE("errors inside a user module name the layer's path and type", "[autodiff]") {
  Generator gen(2);
  Classifier model(gen);
  CHECK(model.fc2->path() == "fc2");
  CHECK(model.fc2->describe() == "fc2 (Linear)");
  CHECK(model.describe() == "Classifier");
  CHECK_NOTHROW(model.forward(ids({1, 2, 3})));
  CHECK_THROWS_WITH(model.fc2(zeros({4, 16})),
                    "fc2 (Linear): expected an input whose last dim is 32, got [4, 16]");
  CHECK_THROWS_WITH(model.norm(zeros({1, 15})),
                    "norm (LayerNorm): expected an input whose last dim is 16, got [1, 15]");
  CHECK_THROWS_WITH(model.norm(zeros({1, 16}, DType::I64)),
                    "norm (LayerNorm): expected a floating input, got I64");
  CHECK_THROWS_WITH(model.forward(Tensor::zeros({3}, DType::F32)),
                    "emb (Embedding): expected integer (I64/I32) indices, got F32");
  CHECK_THROWS_AS(model.forward(ids({1, 10})), IndexError);
  CHECK_THROWS_WITH(model.forward(ids({1, 10})),
                    Catch::Matchers::StartsWith(
                        "emb (Embedding): expected indices in [0, 10), got one out of range ("));
}

TEST_CASE("errors inside a Sequential and in nested modules name the dotted path", "[autodiff]") {
  Generator gen(3);
  nn::Sequential seq;
  seq.push_back(nn::Embedding(10, 4, gen));
  seq.push_back(nn::LayerNorm(4));
  seq.push_back(nn::Linear(8, 2, gen));
  const Var tokens(ids({1, 2}));
  CHECK_THROWS_WITH(seq.forward(tokens),
                    "2 (Linear): expected an input whose last dim is 8, got [2, 4]");
  CHECK_THROWS_WITH(seq.forward(Var(ids({1, 12}))),
                    Catch::Matchers::StartsWith("0 (Embedding): expected indices in [0, 10)"));
  CHECK_THROWS_WITH(seq[1].forward(zeros({2, 3})),
                    "1 (LayerNorm): expected an input whose last dim is 4, got [2, 3]");

  // Paths learnt before the parent itself was registered follow it.
  Outer outer(gen);
  CHECK(outer.encoder->path() == "encoder");
  CHECK(outer.encoder->fc2->path() == "encoder.fc2");
  CHECK_THROWS_WITH(outer.encoder->fc2(zeros({4, 16})),
                    "encoder.fc2 (Linear): expected an input whose last dim is 32, got [4, 16]");
  CHECK_THROWS_WITH(
      outer.body->forward(zeros({2, 4})),
      "body.0 (LayerNorm): expected an input whose last 2 dims are [2, 3], got [2, 4]");
  CHECK_THROWS_WITH(
      outer.body->at<nn::LayerNorm>(1),
      "Module::child_at: sub-module 'body.1' is a Linear, not the requested LayerNorm");

  // A clone keeps the paths below it and is a top-level model itself.
  auto replica = outer.clone_as<Outer>();
  CHECK(replica->encoder->fc2->path() == "encoder.fc2");
  auto encoder = outer.encoder->clone_as<Classifier>();
  CHECK(encoder->path().empty());
  CHECK_THROWS_WITH(encoder->fc2(zeros({4, 16})),
                    "fc2 (Linear): expected an input whose last dim is 32, got [4, 16]");
  CHECK(outer.encoder->fc2->path() == "encoder.fc2");  // the original keeps its own
}

TEST_CASE("a module without a one-Var forward says so, named by its path", "[autodiff]") {
  Generator gen(4);
  nn::Sequential seq;
  seq.push_back(Classifier(gen));
  CHECK_THROWS_WITH(
      seq.forward(zeros({2})),
      Catch::Matchers::StartsWith("0 (Classifier): forward(const Var&) is not implemented"));
}
