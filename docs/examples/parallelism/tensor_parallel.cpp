// Tensor parallelism combined with data parallelism, as docs/parallelism.md shows it: four ranks
// (threads) as a 2x2 mesh; each tp group holds one MLP split over its two ranks (column- then
// row-parallel), each dp replica trains on its own half of the batch. After one SGD step the
// gathered weights equal one rank's step on the whole batch (F64, 1e-12 relative).
#include <cstdio>
#include <vector>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "autodiff/nn/nn.h"
#include "collective/collective.h"
#include "optim/optim.h"
using namespace ruccl;
using autodiff::Var;

namespace {

// The one-rank MLP and its step on the whole batch: the reference.
std::vector<Tensor> one_rank_step(const Tensor& x, const Tensor& y) {
  Generator gen(1);
  nn::Sequential model{nn::Linear(4, 8, gen, {.dtype = DType::F64}), nn::Tanh(),
                       nn::Linear(8, 3, gen, {.dtype = DType::F64})};
  Var loss = nn::mse_loss(model(Var(x)), Var(y));
  loss.backward();
  optim::Sgd().step(0.5, model, optim::GradientsParams::from_module(model));
  std::vector<Tensor> out;
  for (const nn::Param& p : model.parameters()) out.push_back(p.value());
  return out;
}

}  // namespace

int main() {
  Generator data(2);
  const Tensor x = Tensor::randn({6, 4}, data, DType::F64);
  const Tensor y = Tensor::randn({6, 3}, data, DType::F64);
  const std::vector<Tensor> expected = one_rank_step(x, y);
  std::vector<int> ok(4, 0);
  run_ranks(InProcessGroup::create(4), [&](Communicator& comm) {
    Mesh mesh(comm, {{"dp", 2}, {"tp", 2}});
    const Tensor x_dp = x.narrow(0, 3 * mesh.coordinate("dp"), 3);  // this replica's half
    const Tensor y_dp = y.narrow(0, 3 * mesh.coordinate("dp"), 3);
    // doc-begin
    Communicator& tp = mesh.comm("tp");
    Generator gen(1);  // the same seed as the one-rank model: the shards are its slices
    nn::Sequential model{
        nn::ColumnParallelLinear(4, 8, tp, gen, {.dtype = DType::F64}),  // weight [8/2, 4]
        nn::Tanh(),
        nn::RowParallelLinear(8, 3, tp, gen, {.dtype = DType::F64})};  // weight [3, 8/2]

    Var out = model(Var(x_dp));               // replicated over tp
    Var loss = nn::mse_loss(out, Var(y_dp));  // replicated: counts once
    loss.backward();                          // no loss / 2, no all-reduce of fc2.bias
    // Data parallel along the other axis: the dp replicas average their gradients.
    auto grads = optim::GradientsParams::from_module(model).all_reduce_with(mesh.comm("dp"),
                                                                            ReduceOperation::Mean);
    optim::Sgd().step(0.5, model, grads);
    // doc-end
    autodiff::NoGradGuard no_grad;
    namespace dc = autodiff::collective;
    auto& fc1 = model.at<nn::ColumnParallelLinear>(0);
    auto& fc2 = model.at<nn::RowParallelLinear>(2);
    const std::vector<Tensor> got = {dc::all_gather(fc1.weight().var(), tp).value(),
                                     dc::all_gather(fc1.bias().var(), tp).value(),
                                     dc::all_gather_dim(fc2.weight().var(), 1, tp).value(),
                                     fc2.bias().value()};
    bool good = true;
    for (std::size_t i = 0; i < got.size(); ++i) {
      good = good && allclose(got[i], expected[i], 1e-12, 1e-15);
    }
    ok[static_cast<std::size_t>(comm.rank())] = good ? 1 : 0;
  });
  if (ok != std::vector<int>(4, 1)) {
    std::printf("FAIL: tensor_parallel\n");
    return 1;
  }
  std::printf("OK: tensor_parallel\n");
}
