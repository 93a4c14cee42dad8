#include "autodiff/nn/parallel_dropout.h"

#include "autodiff/nn/dropout.h"

namespace ruccl::nn {

std::uint64_t tensor_parallel_seed(std::uint64_t seed, int rank, RngRegion region) {
  if (region == RngRegion::Replicated) return seed;
  const auto block = Generator::philox4x32_10(
      {static_cast<std::uint32_t>(rank), 0u, 0x7e45u, 0u},
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)});
  return static_cast<std::uint64_t>(block[0]) | (static_cast<std::uint64_t>(block[1]) << 32);
}

ParallelDropout::ParallelDropout(double p, const Communicator& comm, RngRegion region,
                                 std::optional<std::uint64_t> seed)
    : p_(p), region_(region) {
  RUCCL_CHECK(p >= 0.0 && p < 1.0, ValueError, "ParallelDropout: expected 0 <= p < 1, got ", p);
  const std::uint64_t base =
      seed ? *seed : with_default_generator([](Generator& g) { return g.next_u64(); });
  gen_ =
      register_generator("generator", Generator(tensor_parallel_seed(base, comm.rank(), region)));
}

Var ParallelDropout::forward(const Var& x) {
  RUCCL_CHECK(is_floating(x.dtype()), DTypeError, describe(), ": expected a floating input, got ",
              x.dtype());
  if (!is_training() || p_ == 0.0) return x;
  return dropout_with(x, p_, generator());
}

}  // namespace ruccl::nn
