// run_ranks: one thread per rank; a failing rank aborts the group promptly and its own error,
// not the Aborted errors it caused elsewhere, is what the caller sees.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>

#include "collective/collective.h"

using namespace ruccl;
using namespace std::chrono_literals;

TEST_CASE("run_ranks runs every rank on its own thread", "[collective]") {
  std::vector<double> sums(3);
  run_ranks(InProcessGroup::create(3), [&](Communicator& comm) {
    const Tensor t = Tensor::full({4}, comm.rank() + 1.0, DType::F64);
    sums[static_cast<std::size_t>(comm.rank())] =
        comm.all_reduce(t, ReduceOperation::Sum).to_vector<double>()[3];
  });
  CHECK(sums == std::vector<double>{6.0, 6.0, 6.0});
}

TEST_CASE("run_ranks rethrows the failing rank's own error, promptly", "[collective]") {
  CommunicatorOptions options;
  options.timeout = 60s;  // the other ranks must not wait for this
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> aborted{0};
  CHECK_THROWS_MATCHES(run_ranks(InProcessGroup::create(4, {}, options),
                                 [&](Communicator& comm) {
                                   if (comm.rank() == 2) throw ValueError("rank 2's data is bad");
                                   try {
                                     (void)comm.all_reduce(Tensor::ones({8}), ReduceOperation::Sum);
                                   } catch (const CollectiveError& e) {
                                     if (e.kind() == CollectiveErrorKind::Aborted ||
                                         e.kind() == CollectiveErrorKind::PeerLost) {
                                       ++aborted;
                                     }
                                     throw;
                                   }
                                 }),
                       ValueError, Catch::Matchers::Message("rank 2's data is bad"));
  CHECK(aborted == 3);
  CHECK(std::chrono::steady_clock::now() - start < 10s);
}

TEST_CASE("root_cause prefers a rank's own error over Aborted and PeerLost", "[collective]") {
  auto as_ptr = [](auto e) { return std::make_exception_ptr(e); };
  const auto aborted = as_ptr(CollectiveError(CollectiveErrorKind::Aborted, "aborted", {0}));
  const auto lost = as_ptr(CollectiveError(CollectiveErrorKind::PeerLost, "lost", {1}));
  const auto mismatch = as_ptr(CollectiveError(CollectiveErrorKind::ShapeMismatch, "shape", {2}));
  const auto value = as_ptr(ValueError("value"));
  CHECK(root_cause({}) == nullptr);
  CHECK(root_cause({nullptr, nullptr}) == nullptr);
  CHECK(root_cause({aborted, lost, value}) == value);
  CHECK(root_cause({nullptr, lost, mismatch, value}) == mismatch);
  CHECK(root_cause({aborted, lost}) == aborted);
}
