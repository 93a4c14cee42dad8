#pragma once
// Generator: seeded, reproducible random numbers, identical across runs and machines.
// Algorithm: Philox4x32-10 (Salmon et al., SC'11), a counter-based generator: output block n is a
// pure function of (seed, n), so the stream does not depend on the platform's std:: distributions.
// Uniform floats take the top 24 (F32) or 53 (F64) bits; normals use Box-Muller on two uniforms.
#include <array>
#include <cstdint>

namespace ruccl {

/// A seeded random stream. Copying it copies the position: two copies draw the same numbers.
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}

  /// 32 random bits.
  std::uint32_t next_u32();
  /// 64 random bits.
  std::uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double next_double();
  /// Uniform in [0, 1) with 24 random bits.
  float next_float();
  /// Standard normal (Box-Muller).
  double next_normal();
  /// Uniform integer in [0, n), without modulo bias.
  std::uint64_t next_below(std::uint64_t n);

  /// The whole state, to save and restore (checkpoints).
  struct State {
    std::uint64_t seed = 0;
    std::uint64_t counter = 0;
    std::uint32_t buffered = 0;  // how many of block's 4 words are still unused
    std::array<std::uint32_t, 4> block{};
    bool has_spare_normal = false;
    double spare_normal = 0.0;
  };
  State state() const;
  void set_state(const State& state);
  std::uint64_t seed() const { return seed_; }

 private:
  std::uint64_t seed_;
  std::uint64_t counter_ = 0;
  std::uint32_t buffered_ = 0;
  std::array<std::uint32_t, 4> block_{};
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

}  // namespace ruccl
