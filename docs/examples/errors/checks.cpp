// The error snippets of docs/errors.md: a RUCCL_CHECK that throws a typed error with its message,
// and a collective's error caught on every rank of a group whose ranks disagree on a shape.
#include <cstdio>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "tensor/core/error.h"
#include "tensor/tensor.h"
using namespace ruccl;

void check_matmul_operand(const Tensor& a) {
  // doc-begin
  RUCCL_CHECK(a.dim() >= 1, ShapeError, "matmul: expected at least 1-d operands, got ", a.shape());
  // doc-end
}

int main() {
  try {
    check_matmul_operand(Tensor::ones({}));
    return 1;
  } catch (const ShapeError& e) {
    if (std::string(e.what()).find("matmul: expected at least 1-d operands, got []") ==
        std::string::npos) {
      return 1;
    }
  }
  std::vector<int> finished(2, 0);
  run_ranks(InProcessGroup::create(2), [&](Communicator& comm) {
    const Tensor t = Tensor::ones({comm.rank() + 1});  // shapes [1] and [2]: a mismatch
    // doc-begin
    try {
      Tensor s = comm.all_reduce(t, ReduceOperation::Sum);
    } catch (const CollectiveError& e) {
      // e.kind(): Timeout (e.ranks() never arrived), PeerLost, a mismatch kind, ...
      // in every case: comm is finished now; build a new group to go on
    }
    // doc-end
    finished[static_cast<std::size_t>(comm.rank())] = comm.finished() ? 1 : 0;
  });
  if (finished != std::vector<int>{1, 1}) return 1;
  std::printf("OK: checks\n");
}
