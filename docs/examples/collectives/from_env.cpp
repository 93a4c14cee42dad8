// ruccl-run: 2 ranks
// Communicator::from_env of docs/collectives.md, started by ruccl-run with two processes (the
// test does): each rank all_reduces a tensor of its rank + 1; both get 1 + 2.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "collective/collective.h"
using namespace ruccl;

int main() {
  const char* rank = std::getenv("RUCCL_RANK");
  const Tensor t = Tensor::full({4}, rank != nullptr && rank[0] == '1' ? 2.0 : 1.0);
  // doc-begin
  // every process, started by ruccl-run, torchrun, srun or mpirun:
  Communicator comm = Communicator::from_env();
  Tensor sum = comm.all_reduce(t, ReduceOperation::Sum);
  // doc-end
  if (sum.to_vector<float>() != std::vector<float>(4, 3.0f)) return 1;
  std::printf("OK: from_env\n");
}
