// run_ranks: one thread per rank; a failing rank aborts the group promptly and its own error,
// not the Aborted errors it caused elsewhere, is what the caller sees.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <streambuf>
#include <string>
#include <thread>

#include "collective/collective.h"
#include "tensor/random/thread_default_generator.h"

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

namespace {

/// Captures what std::cerr receives while it lives, readable from any thread while rank threads
/// write (a streambuf guarded by a mutex).
class CerrCapture : public std::streambuf {
 public:
  CerrCapture() : previous_(std::cerr.rdbuf(this)) {}
  ~CerrCapture() override { std::cerr.rdbuf(previous_); }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      std::lock_guard<std::mutex> lock(mutex_);
      text_ += static_cast<char>(c);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    text_.append(s, static_cast<std::size_t>(n));
    return n;
  }

 private:
  mutable std::mutex mutex_;
  std::string text_;
  std::streambuf* previous_;
};

}  // namespace

TEST_CASE("run_ranks prints the first failure at once, naming the ranks still running",
          "[collective]") {
  CerrCapture cerr;
  std::atomic<bool> printed_before_join{false};
  CHECK_THROWS_AS(run_ranks(InProcessGroup::create(3),
                            [&](Communicator& comm) {
                              if (comm.rank() == 1) throw ValueError("bad batch");
                              if (comm.rank() == 2) {
                                // Rank 2 waits (bounded) until the failure has been printed.
                                const auto until = std::chrono::steady_clock::now() + 5s;
                                while (cerr.text().find("bad batch") == std::string::npos &&
                                       std::chrono::steady_clock::now() < until) {
                                  std::this_thread::sleep_for(1ms);
                                }
                                printed_before_join =
                                    cerr.text().find("bad batch") != std::string::npos;
                              }
                            }),
                  ValueError);
  CHECK(printed_before_join);
  const std::string text = cerr.text();
  CHECK_THAT(text, Catch::Contains("run_ranks: rank 1 failed: bad batch (ranks still running: "));
  CHECK_THAT(text, Catch::Contains("2)"));
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);  // one line: the first failure only
}

TEST_CASE("run_ranks gives up on a rank stuck in its own code after the grace period",
          "[collective]") {
  // Rank 1 never reaches the collective (it waits in its own code, bounded by `release`); rank 0's
  // all_reduce times out. Without give_up_after run_ranks would wait for rank 1 as long as it
  // runs; with it, run_ranks throws soon after rank 0 failed and leaves rank 1's thread running.
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto stuck_done = std::make_shared<std::atomic<bool>>(false);
  CommunicatorOptions options;
  options.timeout = 200ms;
  CerrCapture cerr;
  const auto start = std::chrono::steady_clock::now();
  try {
    run_ranks(
        InProcessGroup::create(2, {}, options),
        [release, stuck_done](Communicator& comm) {
          if (comm.rank() == 1) {
            const auto until = std::chrono::steady_clock::now() + 10s;
            while (!*release && std::chrono::steady_clock::now() < until) {
              std::this_thread::sleep_for(1ms);
            }
            *stuck_done = true;
            return;
          }
          (void)comm.all_reduce(Tensor::ones({2}), ReduceOperation::Sum);
        },
        RunRanksOptions().with_give_up_after(300ms));
    FAIL("run_ranks returned");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::Timeout);
    CHECK(e.ranks() == std::vector<int>{1});
    CHECK_THAT(e.what(),
               Catch::StartsWith("run_ranks: gave up on rank(s) 1 (their threads are "
                                 "detached, still running) 300 ms after rank 0 failed: "));
    bool nested_timeout = false;
    try {
      std::rethrow_if_nested(e);
    } catch (const CollectiveError& cause) {
      nested_timeout = cause.kind() == CollectiveErrorKind::Timeout;
    }
    CHECK(nested_timeout);
  }
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < 5s);
  CHECK_FALSE(*stuck_done);  // given up on while it still ran
  *release = true;
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!*stuck_done && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  CHECK(*stuck_done);
  std::this_thread::sleep_for(20ms);  // the detached thread's last steps after fn returned
  CHECK_THAT(cerr.text(), Catch::Contains("run_ranks: rank 0 failed: "));
  CHECK_THAT(cerr.text(), Catch::Contains("(ranks still running: 1)"));
}

TEST_CASE(
    "each rank thread of run_ranks draws from its own copy of the caller's default "
    "generator",
    "[collective]") {
  const Generator::State saved = with_default_generator([](Generator& g) { return g.state(); });
  manual_seed(11);
  Generator expected(11);
  (void)expected.next_u64();
  (void)with_default_generator([](Generator& g) { return g.next_u64(); });  // the caller moved on
  std::vector<std::vector<std::uint64_t>> drawn(3);
  run_ranks(InProcessGroup::create(3), [&](Communicator& comm) {
    if (comm.rank() == 2) manual_seed(5);  // this rank's generator only
    auto& out = drawn[static_cast<std::size_t>(comm.rank())];
    for (int i = 0; i < 4; ++i) {
      out.push_back(with_default_generator([](Generator& g) { return g.next_u64(); }));
    }
  });
  std::vector<std::uint64_t> from_caller, from_seed_5;
  Generator five(5);
  for (int i = 0; i < 4; ++i) {
    from_caller.push_back(expected.next_u64());
    from_seed_5.push_back(five.next_u64());
  }
  CHECK(drawn[0] == from_caller);
  CHECK(drawn[1] == from_caller);
  CHECK(drawn[2] == from_seed_5);
  // The caller's generator neither advanced nor was reseeded by the ranks.
  Generator caller(11);
  (void)caller.next_u64();
  CHECK(with_default_generator([](Generator& g) { return g.state(); }) == caller.state());
  with_default_generator([&](Generator& g) { g.set_state(saved); });
}
