// tensor_collectives: three in-process ranks all-reduce 257 F32 values with the ring algorithm.
// Rank r holds v[i] = i + r, doubles it, and all-reduces with Sum: every rank gets
// sum_r 2(i + r) = 6i + 6; each result squared must equal (6i + 6)^2 exactly, and the rank's
// input must be unchanged. Prints a one-line verdict; exit code 0 on success, 1 otherwise.
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "tensor/tensor.h"

int main() {
  using namespace ruccl;
  constexpr int kRanks = 3;
  constexpr std::int64_t kCount = 257;
  CommunicatorOptions options;
  options.all_reduce_algorithm = Algorithm::Ring;
  std::vector<Communicator> comms = InProcessGroup::create(kRanks, {}, options);

  std::vector<std::string> failures(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        Communicator& comm = comms[static_cast<std::size_t>(r)];
        const Tensor v = Tensor::arange(0, kCount, 1, DType::F32) + static_cast<double>(r);
        const Tensor doubled = 2.0 * v;
        const Tensor sum = comm.all_reduce(doubled, ReduceOperation::Sum);
        const std::vector<float> squared = (sum * sum).to_vector<float>();
        const std::vector<float> input = doubled.to_vector<float>();
        for (std::int64_t i = 0; i < kCount; ++i) {
          const float expected = static_cast<float>((6 * i + 6) * (6 * i + 6));
          const float original = static_cast<float>(2 * (i + r));
          if (squared[static_cast<std::size_t>(i)] != expected ||
              input[static_cast<std::size_t>(i)] != original) {
            failures[static_cast<std::size_t>(r)] =
                str("rank ", r, " element ", i, ": squared ", squared[static_cast<std::size_t>(i)],
                    " (expected ", expected, "), input ", input[static_cast<std::size_t>(i)],
                    " (expected ", original, ")");
            return;
          }
        }
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = str("rank ", r, ": ", e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& f : failures) {
    if (!f.empty()) {
      std::printf("tensor_collectives: FAIL: %s\n", f.c_str());
      return 1;
    }
  }
  std::printf(
      "tensor_collectives: OK: %d ranks, ring all_reduce Sum of %lld F32 values; every result "
      "squared is (6i + 6)^2 and the inputs are unchanged\n",
      kRanks, static_cast<long long>(kCount));
  return 0;
}
