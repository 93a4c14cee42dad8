// run_ranks of docs/api.md: four in-process ranks each "train" (here: all_reduce their rank and
// return it as a loss); every rank sees the same sum.
#include <cstdio>
#include <vector>

#include "collective/collective.h"
using namespace ruccl;

double train(Communicator& comm) {
  const Tensor mine = Tensor::full({1}, static_cast<double>(comm.rank()), DType::F64);
  return comm.all_reduce(mine, ReduceOperation::Sum).item<double>();
}

int main() {
  // doc-begin
  std::vector<double> loss(4);
  run_ranks(InProcessGroup::create(4),
            [&](Communicator& comm) { loss[comm.rank()] = train(comm); });
  // doc-end
  for (double l : loss) {
    if (l != 0 + 1 + 2 + 3) return 1;
  }
  std::printf("OK: run_ranks\n");
}
