// ruccl-run: 2 ranks
// Asynchronous collectives of docs/collectives.md, started by ruccl-run with two processes (the
// test does): each rank's backward starts the all_reduce of every parameter's gradient as soon as
// it is final (the gradient-ready hook of docs/autodiff.md), so the reductions move while the
// rest of backward runs; the sums equal a blocking all_reduce of the same gradients.
#include <cstdio>
#include <vector>

#include "autodiff/autodiff.h"
#include "collective/collective.h"
using namespace ruccl;
using namespace ruccl::autodiff;

int main() {
  Communicator comm = Communicator::from_env();
  const double r = comm.rank() + 1.0;
  Var x(Tensor::full({8}, r, DType::F64), false);
  std::vector<Var> params;
  for (int l = 0; l < 3; ++l) params.emplace_back(Tensor::full({8}, l + 2.0, DType::F64), true);
  Var h = x;
  for (const Var& w : params) h = mul(h, w);
  Var loss = sum(h);
  // doc-begin
  std::vector<Work> works;  // one per parameter, in the order their gradients became final
  BackwardOptions options;
  options.grad_ready = [&](const Var& leaf) {
    works.push_back(comm.all_reduce_async(leaf.grad(), ReduceOperation::Sum));
  };
  loss.backward(options);  // the last layer's reduction is moving before the first's grad exists
  for (Work& w : works) w.wait();  // or: w.is_completed() while computing something else
  // doc-end
  if (works.size() != params.size()) return 1;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Var& w = params[params.size() - 1 - i];  // the hook fires from the last layer back
    const Tensor expected = comm.all_reduce(w.grad(), ReduceOperation::Sum);
    if (works[i].result().to_vector<double>() != expected.to_vector<double>()) return 1;
  }
  std::printf("OK: overlap_backward\n");
}
