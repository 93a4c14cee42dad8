#pragma once
// Dropout under tensor parallelism (Megatron-LM's RNG tracker): an activation REPLICATED over the
// group must be dropped with the same mask on every rank (else the replicas diverge), one SHARDED
// over it (attention heads, a block of the sequence) with a different mask on every rank (else
// the shards' masks repeat). Each ParallelDropout owns a Generator stream picked by its region, so
// the masks resume exactly from a saved TrainingRecord, as nn::Dropout's.
#include <cstdint>
#include <optional>

#include "autodiff/nn/module.h"
#include "collective/communicator.h"

namespace ruccl::nn {

/// How an activation is laid out over a tensor-parallel group, for the random numbers drawn on it.
enum class RngRegion {
  Replicated,  ///< the same values on every rank: the same stream on every rank
  Sharded,     ///< a different part on every rank: a stream of its own per rank
};

/// The seed of the stream a rank draws from in `region`: `seed` itself when Replicated; when
/// Sharded, a seed of rank `rank`'s own, the first 64 bits of the Philox4x32-10 block
/// philox(counter = {rank, 0, 0x7e45, 0}, key = seed) (tensor/random/generator.h), so every
/// (seed, rank) pair gets an unrelated stream, the same on every platform and run.
std::uint64_t tensor_parallel_seed(std::uint64_t seed, int rank, RngRegion region);

/// Dropout whose masks follow RngRegion over the group `comm` (the communicator is read only for
/// the rank: dropout communicates nothing). In training mode zeroes each element with probability
/// p and scales the rest by 1 / (1 - p), as nn::Dropout, drawing from the registered "generator",
/// seeded with tensor_parallel_seed(seed, rank, region). The seed: given, or drawn from the
/// default generator at construction (as nn::Dropout: the same on every rank under run_ranks or
/// after the same manual_seed).
///
///   nn::ParallelDropout attn_drop(0.1, tp, nn::RngRegion::Sharded);      // heads split over tp
///   nn::ParallelDropout resid_drop(0.1, tp, nn::RngRegion::Replicated);  // after a row layer
class ParallelDropout : public Cloneable<ParallelDropout> {
 public:
  ParallelDropout(double p, const Communicator& comm, RngRegion region,
                  std::optional<std::uint64_t> seed = std::nullopt);
  Var forward(const Var& x) override;
  double p() const { return p_; }
  RngRegion region() const { return region_; }
  Generator& generator() { return generator_at(gen_); }

 private:
  double p_;
  RngRegion region_;
  std::size_t gen_;
};

}  // namespace ruccl::nn
