#pragma once
// Generator: seeded, reproducible random numbers, identical across runs and machines.
//
// Algorithm: Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as
// 1, 2, 3", SC'11), a counter-based generator. Block n (four 32-bit words) is
//   philox4x32_10(counter = {n mod 2^32, n / 2^32, 0, 0}, key = {seed mod 2^32, seed / 2^32})
// so the stream is a pure function of the seed, with no platform std:: distribution involved.
// Words are consumed in order: block 0 word 0..3, block 1 word 0..3, ...
// Derived draws (all documented so another implementation can reproduce them):
//   next_u64     two words, the first is the low half
//   next_double  next_u64() >> 11, times 2^-53            (53 random bits, in [0, 1))
//   next_float   next_u32() >> 8, times 2^-24             (24 random bits, in [0, 1))
//   next_normal  Box-Muller on u1 = next_double(), u2 = next_double():
//                r = sqrt(-2 ln(1 - u1)), returns r cos(2 pi u2) and keeps r sin(2 pi u2) for the
//                next call (values go through the C library's log/cos/sin, so the last bit may
//                differ between C libraries; the integer and uniform streams never do)
//   next_below   rejection sampling on next_u64 (no modulo bias): draws until x >= 2^64 mod n,
//                returns x mod n
#include <array>
#include <cstdint>
#include <mutex>
#include <utility>

namespace ruccl {

/// A seeded random stream. Copying it copies the position: two copies draw the same numbers.
///
///   Generator gen(42);
///   Tensor noise = Tensor::randn({4, 8}, gen);
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}

  /// One Philox4x32-10 block: ten rounds over `counter` with `key` (the Random123 reference).
  static std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> counter,
                                                    std::array<std::uint32_t, 2> key);

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
  /// Uniform integer in [0, n), without modulo bias. Throws ValueError for n == 0.
  std::uint64_t next_below(std::uint64_t n);

  /// The whole state, to save and restore (checkpoints; tensor/serialize/tensor_archive.h has its
  /// cereal serialisation).
  struct State {
    std::uint64_t seed = 0;
    std::uint64_t counter = 0;   // index of the next block to compute
    std::uint32_t buffered = 0;  // how many of block's 4 words are still unused
    std::array<std::uint32_t, 4> block{};
    bool has_spare_normal = false;
    double spare_normal = 0.0;
    bool operator==(const State&) const = default;
  };
  /// The current position in the stream.
  State state() const;
  /// Continues the stream from `state`; throws ValueError when `buffered` > 4.
  void set_state(const State& state);
  /// The seed the stream was made from.
  std::uint64_t seed() const { return seed_; }

 private:
  std::uint64_t seed_;
  std::uint64_t counter_ = 0;
  std::uint32_t buffered_ = 0;
  std::array<std::uint32_t, 4> block_{};
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

/// The seed the default generator starts from in every process (libtorch's default CPU seed,
/// 67280421310721), so a program that never calls manual_seed still draws the same numbers on
/// every run and platform.
inline constexpr std::uint64_t kDefaultGeneratorSeed = 67280421310721ull;

/// The default generator: what layers draw their initial weights from when given no Generator
/// (nn::Linear(16, 32)). One per process, shared by every thread but one holding a
/// ThreadDefaultGenerator (tensor/random/thread_default_generator.h: each run_ranks thread does).
/// Guarded by a mutex (libtorch's too): draw only holding default_generator_mutex(), or through
/// with_default_generator. Plain threads that build models at once draw in an order nobody
/// controls: rank threads that must agree run under run_ranks, or get their own Generator (or
/// DataParallel::initialize broadcasts the parameters).
Generator& default_generator();
/// The mutex guarding default_generator() (this thread's own under a ThreadDefaultGenerator).
std::mutex& default_generator_mutex();

/// Restarts the default generator from `seed` (torch::manual_seed): the stream of Generator(seed).
/// Thread-safe. Under a ThreadDefaultGenerator (a rank thread) it reseeds that thread's only.
void manual_seed(std::uint64_t seed);

/// Calls fn(default_generator()) with its mutex held and returns what fn returns.
///
///   Tensor noise = with_default_generator([](Generator& g) { return Tensor::randn({4}, g); });
template <typename Fn>
decltype(auto) with_default_generator(Fn&& fn) {
  std::lock_guard<std::mutex> lock(default_generator_mutex());
  return std::forward<Fn>(fn)(default_generator());
}

}  // namespace ruccl
