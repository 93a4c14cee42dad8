// Writing modules: typed handles to sub-modules, layer options by name, the default generator,
// a forward with more than one input, clone() and to(DType), and an error that names the module.
#include <cstdio>
#include <string>

#include "autodiff/autodiff.h"

using namespace ruccl;
using autodiff::Var;

// A block with two inputs: x [batch, 16] and a mask [batch, 16] of 0/1.
class GatedBlock : public nn::Cloneable<GatedBlock> {
 public:
  GatedBlock()
      : proj(register_module("proj", nn::Linear(16, 16, {.bias = false}))),
        norm(register_module("norm", nn::LayerNorm(16, {.eps = 1e-6}))) {}
  Var forward(const Var& x, const Var& mask) { return norm(x + proj(x) * mask); }
  using nn::Module::forward;  // keeps the one-input forward visible (Sequential calls it)

  nn::ModuleHandle<nn::Linear> proj;
  nn::ModuleHandle<nn::LayerNorm> norm;
};

class Net : public nn::Cloneable<Net> {
 public:
  Net()
      : block(register_module("block", GatedBlock())),
        head(register_module("head",
                             nn::Sequential{nn::Linear(16, 32), nn::GELU(), nn::Linear(32, 4)})) {}
  Var forward(const Var& x, const Var& mask) { return head(block->forward(x, mask)); }
  using nn::Module::forward;

  nn::ModuleHandle<GatedBlock> block;
  nn::ModuleHandle<nn::Sequential> head;
};

int main() {
  manual_seed(7);  // layers draw their initial weights from the default generator
  Net net;
  net.to(DType::F64);  // every parameter, in place: ids, ties and handles stay

  Generator gen(1);
  const Tensor x = Tensor::randn({3, 16}, gen, DType::F64);
  const Tensor mask = Tensor::ones({3, 16}, DType::F64);  // a Tensor passes as a constant Var
  Var out = net.forward(x, mask);
  out.sum().backward();
  std::printf("logits %s, %zu parameters, block.proj.weight has a gradient: %s\n",
              out.shape().to_string().c_str(), net.parameters().size(),
              net.block->proj->weight().grad().defined() ? "yes" : "no");

  // A replica computes with its own parameters: changing the original leaves it alone.
  auto replica = net.clone_as<Net>();
  const double before = replica->forward(x, mask).sum().value().item<double>();
  Tensor w = net.block->proj->weight().value();  // a handle to the original's weight
  w.fill_(0.0);
  const double after = replica->forward(x, mask).sum().value().item<double>();

  // A wrong input names the module, its type and what it expected.
  std::string message;
  try {
    net.forward(Tensor::randn({3, 8}, gen, DType::F64), mask);
  } catch (const ShapeError& e) {
    message = e.what();
  }
  std::printf("%s\n", message.c_str());
  if (before != after || message.find("block.proj (Linear)") == std::string::npos) return 1;
  std::printf("OK: modules\n");
  return 0;
}
