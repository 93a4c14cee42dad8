// Centralized algorithms: rank 0 (or the root) does all the work. The simplest strategy, and the
// reference the others are checked against.
#include "collective/algorithms/algorithm.h"

namespace ruccl {

void centralized_all_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                            std::size_t count, const ReduceKernel& kernel) {
  direct_reduce(ctx, in, out, count, kernel, 0);
  const AlgorithmContext down{ctx.transport, ctx.tag + 1, ctx.deadline};
  direct_broadcast(down, out, count * kernel.element_size(), 0);
}

}  // namespace ruccl
