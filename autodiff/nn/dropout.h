#pragma once
#include <cstdint>

#include "autodiff/nn/module.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

/// In training mode zeroes each element with probability p and scales the rest by 1 / (1 - p);
/// the identity in evaluation mode (or for p = 0). The mask comes from the module's own seeded
/// Generator (uniform draws u, kept where u >= p), registered as the module's "generator": a
/// TrainingRecord saves its state, so a resumed run draws the same masks. A clone() copies the
/// generator's state, so replicas draw the same masks unless reseeded with set_seed.
///
/// Seed: given, or else drawn from the default generator when the module is built (one
/// next_u64(), as libtorch's dropout draws from the default generator): after
/// ruccl::manual_seed(s) the same code builds the same masks; two Dropouts built one after the
/// other get different seeds.
/// x times a keep mask scaled by 1 / (1 - p): uniform draws u from `gen` (F64, x's shape), kept
/// where u >= p. What Dropout and ParallelDropout apply in training mode.
Var dropout_with(const Var& x, double p, Generator& gen);

class Dropout : public Cloneable<Dropout> {
 public:
  /// ValueError unless 0 <= p < 1. Seeded from the default generator (see the class comment).
  explicit Dropout(double p = 0.5);
  /// With an explicit seed.
  Dropout(double p, std::uint64_t seed);
  Var forward(const Var& x) override;
  double p() const { return p_; }
  void set_seed(std::uint64_t seed) { generator() = Generator(seed); }
  Generator& generator() { return generator_at(gen_); }

 private:
  double p_;
  std::size_t gen_;
};

}  // namespace ruccl::nn
