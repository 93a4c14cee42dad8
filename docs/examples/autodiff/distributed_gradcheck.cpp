// distributed_gradcheck of docs/autodiff.md over three ranks: the whole cross-rank Jacobian of an
// all_gather_dim along the last axis, then a product with a per-rank constant, against central
// differences in float64. (REQUIRE stands for the Catch2 macro a test would use.)
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "autodiff/collective/distributed_gradcheck.h"
#include "tensor/tensor.h"
using namespace ruccl;
using namespace ruccl::autodiff;
using namespace ruccl::autodiff::collective;

#define REQUIRE(condition)                              \
  do {                                                  \
    if (!(condition)) {                                 \
      std::fprintf(stderr, "failed: %s\n", #condition); \
      std::exit(1);                                     \
    }                                                   \
  } while (false)

int main() {
  Generator gen(3);
  auto input = [&] { return Var(Tensor::randn({2, 3}, gen).to(DType::F64), true); };
  auto constant = [&] { return Var(Tensor::randn({2, 9}, gen).to(DType::F64), false); };
  const Var x0 = input(), x1 = input(), x2 = input();
  const Var c0 = constant(), c1 = constant(), c2 = constant();
  // doc-begin
  DistributedGradcheckReport r = distributed_gradcheck(
      [](Communicator& comm, const std::vector<Var>& in) {
        return sum(mul(all_gather_dim(in[0], -1, comm), in[1]));
      },
      {{x0, c0}, {x1, c1}, {x2, c2}});  // rank r's inputs; those requiring grad must be F64
  REQUIRE(r.ok);                        // else r.message names both ranks, elements and values
  // doc-end
  std::printf("OK: distributed_gradcheck\n");
}
