// Philox4x32-10 and the draws built on it; see generator.h for the exact definitions.
#include "tensor/random/generator.h"

#include <cmath>
#include <numbers>

#include "tensor/core/error.h"
#include "tensor/random/thread_default_generator.h"

namespace ruccl {

namespace {

// Constants of the Random123 reference implementation (philox.h).
constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;
constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1
constexpr int kRounds = 10;

}  // namespace

std::array<std::uint32_t, 4> Generator::philox4x32_10(std::array<std::uint32_t, 4> c,
                                                      std::array<std::uint32_t, 2> key) {
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      key[0] += kWeyl0;
      key[1] += kWeyl1;
    }
    const std::uint64_t p0 = static_cast<std::uint64_t>(kMultiplier0) * c[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(kMultiplier1) * c[2];
    const auto hi0 = static_cast<std::uint32_t>(p0 >> 32);
    const auto lo0 = static_cast<std::uint32_t>(p0);
    const auto hi1 = static_cast<std::uint32_t>(p1 >> 32);
    const auto lo1 = static_cast<std::uint32_t>(p1);
    c = {hi1 ^ c[1] ^ key[0], lo1, hi0 ^ c[3] ^ key[1], lo0};
  }
  return c;
}

std::uint32_t Generator::next_u32() {
  if (buffered_ == 0) {
    block_ = philox4x32_10(
        {static_cast<std::uint32_t>(counter_), static_cast<std::uint32_t>(counter_ >> 32), 0u, 0u},
        {static_cast<std::uint32_t>(seed_), static_cast<std::uint32_t>(seed_ >> 32)});
    ++counter_;
    buffered_ = 4;
  }
  return block_[4 - buffered_--];
}

std::uint64_t Generator::next_u64() {
  const std::uint64_t lo = next_u32();
  const std::uint64_t hi = next_u32();
  return lo | (hi << 32);
}

double Generator::next_double() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

float Generator::next_float() { return static_cast<float>(next_u32() >> 8) * 0x1.0p-24f; }

double Generator::next_normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  const double u1 = next_double();
  const double u2 = next_double();
  const double r = std::sqrt(-2.0 * std::log(1.0 - u1));  // 1 - u1 is in (0, 1]: log is finite
  const double theta = 2.0 * std::numbers::pi * u2;
  spare_normal_ = r * std::sin(theta);
  has_spare_normal_ = true;
  return r * std::cos(theta);
}

std::uint64_t Generator::next_below(std::uint64_t n) {
  RUCCL_CHECK(n > 0, ValueError, "Generator::next_below: expected n > 0, got 0");
  const std::uint64_t threshold = (0 - n) % n;  // 2^64 mod n: draws below it would bias
  while (true) {
    const std::uint64_t x = next_u64();
    if (x >= threshold) return x % n;
  }
}

Generator::State Generator::state() const {
  return State{seed_, counter_, buffered_, block_, has_spare_normal_, spare_normal_};
}

void Generator::set_state(const State& state) {
  RUCCL_CHECK(state.buffered <= 4, ValueError,
              "Generator::set_state: expected buffered <= 4 (words left in a block), got ",
              state.buffered);
  seed_ = state.seed;
  counter_ = state.counter;
  buffered_ = state.buffered;
  block_ = state.block;
  has_spare_normal_ = state.has_spare_normal;
  spare_normal_ = state.spare_normal;
}

namespace {
/// The calling thread's innermost ThreadDefaultGenerator; null: the process's generator.
thread_local ThreadDefaultGenerator* thread_default = nullptr;
}  // namespace

ThreadDefaultGenerator::ThreadDefaultGenerator(const Generator& start)
    : generator_(start), previous_(thread_default) {
  thread_default = this;
}

ThreadDefaultGenerator::~ThreadDefaultGenerator() { thread_default = previous_; }

ThreadDefaultGenerator* ThreadDefaultGenerator::current() { return thread_default; }

Generator& default_generator() {
  if (thread_default != nullptr) return thread_default->generator();
  static Generator generator(kDefaultGeneratorSeed);  // initialised once, thread-safely (C++11)
  return generator;
}

std::mutex& default_generator_mutex() {
  if (thread_default != nullptr) return thread_default->mutex();
  static std::mutex mutex;
  return mutex;
}

void manual_seed(std::uint64_t seed) {
  std::lock_guard<std::mutex> lock(default_generator_mutex());
  default_generator() = Generator(seed);
}

}  // namespace ruccl
