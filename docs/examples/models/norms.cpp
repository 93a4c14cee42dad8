// Buffers and modes: a module with a registered buffer (a mask), BatchNorm1d's running statistics,
// train() and eval(), a Param member that clone() re-seats, and a SyncBatchNorm over two rank
// threads that equals BatchNorm on the whole batch.
#include <cmath>
#include <cstdio>

#include "autodiff/autodiff.h"
#include "collective/collective.h"
#include "tensor/tensor.h"

using namespace ruccl;
using autodiff::Var;

class Block : public nn::Cloneable<Block> {
 public:
  Block()
      : fc(register_module("fc", nn::Linear(4, 8))),
        bn(register_module("bn", nn::BatchNorm1d(8))),
        drop(register_module("drop", nn::Dropout(0.25))),
        scale(Tensor::full({8}, 0.5)),  // a Param member, kept beside its registration
        mask_(register_buffer("mask", Tensor::from_vector<float>({1, 1, 1, 1, 0, 0, 1, 1}, {8}))) {
    register_parameter("scale", scale);
  }
  Var forward(const Var& x) override {
    return drop(bn(fc(x))) * scale.var() * Var(buffer_at(mask_));
  }

  nn::ModuleHandle<nn::Linear> fc;
  nn::ModuleHandle<nn::BatchNorm1d> bn;
  nn::ModuleHandle<nn::Dropout> drop;
  nn::Param scale;

 private:
  std::size_t mask_;
};

int main() {
  manual_seed(0);
  Block block;
  Generator gen(1);
  const Tensor x = Tensor::randn({16, 4}, gen);
  block(x);  // training mode: batch statistics, and the running statistics move
  block(x);
  for (const auto& [path, buffer] : block.named_buffers()) {
    std::printf("buffer %-22s %s\n", path.c_str(), buffer.shape().to_string().c_str());
  }
  std::printf("parameters: %zu (buffers are not among them)\n", block.parameters().size());

  block.eval();  // every sub-module: Dropout is the identity, BatchNorm uses its running stats
  const bool same = block(x).value().to_vector<float>() == block(x).value().to_vector<float>();
  std::printf("evaluation mode is deterministic: %s\n", same ? "yes" : "no");

  auto replica = block.clone_as<Block>();  // buffers copied, the Param member re-seated
  block.scale.value().fill_(0.0);          // in place, on the original only
  const bool own = replica->scale.same(replica->param("scale")) &&
                   replica->scale.value().to_vector<float>()[0] == 0.5f;

  // SyncBatchNorm: rank 0 holds 3 samples, rank 1 holds 5; both normalise by all 8's statistics.
  const Tensor batch = Tensor::randn({8, 3}, gen, DType::F64);
  nn::BatchNorm1d whole(3, {.dtype = DType::F64});
  const Tensor expected = whole(batch).value();
  double worst[2] = {0.0, 0.0};
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    const std::int64_t first = comm.rank() == 0 ? 0 : 3;
    const std::int64_t count = comm.rank() == 0 ? 3 : 5;
    nn::SyncBatchNorm bn(3, comm, {.dtype = DType::F64});
    const Tensor y = bn(batch.narrow(0, first, count)).value();
    const Tensor diff = (y - expected.narrow(0, first, count)).abs().max();
    worst[comm.rank()] = diff.item<double>();
  });
  std::printf("SyncBatchNorm over 2 ranks (3 + 5 samples) vs BatchNorm on 8: max |diff| %.1e\n",
              std::fmax(worst[0], worst[1]));
  if (!same || !own || !(std::fmax(worst[0], worst[1]) < 1e-12)) return 1;
  std::printf("OK: norms\n");
  return 0;
}
