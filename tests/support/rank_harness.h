#pragma once
// Multi-rank test harness (gloo's style): run one thread per rank, collect each rank's result or
// exception, join, and only then let the main thread assert (Catch2 2 assertions are not
// thread-safe, so rank threads must not use REQUIRE/CHECK).
//
//   auto out = run_ranks(4, [&](int rank) { return rank * 2; });
//   for (int r = 0; r < 4; ++r) REQUIRE(out[r].value() == 2 * r);
//
//   auto sums = run_group(3, [&](Communicator& comm) {
//     return comm.all_reduce(Tensor::full({4}, comm.rank()), ReduceOperation::Sum);
//   });
//   REQUIRE_THAT(sums[1].value(), TensorEqual(Tensor::full({4}, 3.0)));
//
//   auto errs = run_group(2, [&](Communicator& comm) { ...; });
//   REQUIRE(error_kind(errs[0]) == CollectiveErrorKind::ShapeMismatch);
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <stdexcept>
#include <string>

#include "collective/common/collective_error.h"
#include "collective/communicator.h"
#include "collective/in_process_group.h"

namespace ruccl::testing {

/// A check inside a rank's function, where Catch2's assertions must not run (they are not
/// thread-safe: ThreadSanitizer reports its counters): throws std::logic_error naming `what` when
/// `ok` is false, and the rank's outcome carries it to the test's thread (value() rethrows it).
inline void rank_check(bool ok, const char* what) {
  if (!ok) throw std::logic_error(std::string("rank check failed: ") + what);
}
#define RUCCL_RANK_CHECK(...) \
  ::ruccl::testing::rank_check(static_cast<bool>(__VA_ARGS__), #__VA_ARGS__)

/// What one rank's function produced: a value, or the exception it threw.
template <typename T>
class RankOutcome {
 public:
  RankOutcome() = default;
  explicit RankOutcome(T value) : state_(std::move(value)) {}
  explicit RankOutcome(std::exception_ptr error) : state_(std::move(error)) {}

  /// Whether the rank returned normally.
  bool ok() const { return std::holds_alternative<T>(state_); }
  /// The returned value; rethrows the rank's exception if it threw.
  const T& value() const {
    if (!ok()) std::rethrow_exception(std::get<std::exception_ptr>(state_));
    return std::get<T>(state_);
  }
  T& value() {
    if (!ok()) std::rethrow_exception(std::get<std::exception_ptr>(state_));
    return std::get<T>(state_);
  }
  /// The exception the rank threw (null when it returned).
  std::exception_ptr error() const { return ok() ? nullptr : std::get<std::exception_ptr>(state_); }
  /// The thrown exception's what(), or "" when the rank returned (or threw a non-std exception).
  std::string message() const {
    if (ok()) return "";
    try {
      std::rethrow_exception(error());
    } catch (const std::exception& e) {
      return e.what();
    } catch (...) {
      return "(non-std exception)";
    }
  }

 private:
  std::variant<std::exception_ptr, T> state_{std::exception_ptr{}};
};

/// The result type of a rank function: void becomes std::monostate.
template <typename Fn, typename... Args>
using RankValue = std::conditional_t<std::is_void_v<std::invoke_result_t<Fn, Args...>>,
                                     std::monostate, std::invoke_result_t<Fn, Args...>>;

namespace detail {
template <typename Fn, typename... Args>
RankOutcome<RankValue<Fn, Args...>> invoke_rank(Fn& fn, Args&&... args) {
  using V = RankValue<Fn, Args...>;
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Fn, Args...>>) {
      fn(std::forward<Args>(args)...);
      return RankOutcome<V>(std::monostate{});
    } else {
      return RankOutcome<V>(fn(std::forward<Args>(args)...));
    }
  } catch (...) {
    return RankOutcome<V>(std::current_exception());
  }
}
}  // namespace detail

/// Runs fn(rank) on `world` threads (rank 0..world-1), joins them all, returns each outcome.
template <typename Fn>
std::vector<RankOutcome<RankValue<Fn, int>>> run_ranks(int world, Fn fn) {
  std::vector<RankOutcome<RankValue<Fn, int>>> out(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] { out[static_cast<std::size_t>(r)] = detail::invoke_rank(fn, r); });
  }
  for (auto& t : threads) t.join();
  return out;
}

/// Makes a group of `world_size` ranks (element r is rank r) over some transport: the harness
/// runs the same tests over every one (tests/collective/group_factories.h lists them).
using GroupFactory =
    std::function<std::vector<Communicator>(int world_size, CommunicatorOptions options)>;

/// Builds a group of `world` ranks with `make` and runs fn(comm) on one thread per rank (comm is
/// that rank's Communicator, destroyed when its thread ends). Joins, returns each outcome.
template <typename Fn>
std::vector<RankOutcome<RankValue<Fn, Communicator&>>> run_group_with(
    const GroupFactory& make, int world, Fn fn, CommunicatorOptions options = {}) {
  std::vector<Communicator> comms = make(world, options);
  return run_ranks(world, [&](int r) {
    Communicator comm = std::move(comms[static_cast<std::size_t>(r)]);
    return fn(comm);
  });
}

/// run_group_with over an in-process group (InProcessGroup::create), with per-rank devices.
template <typename Fn>
std::vector<RankOutcome<RankValue<Fn, Communicator&>>> run_group(int world, Fn fn,
                                                                 CommunicatorOptions options = {},
                                                                 std::vector<Device> devices = {}) {
  return run_group_with(
      [&](int w, CommunicatorOptions o) { return InProcessGroup::create(w, devices, o); }, world,
      std::move(fn), options);
}

/// The CollectiveErrorKind a rank threw, or std::nullopt when it returned or threw something
/// else.
template <typename T>
std::optional<CollectiveErrorKind> error_kind(const RankOutcome<T>& outcome) {
  if (outcome.ok()) return std::nullopt;
  try {
    std::rethrow_exception(outcome.error());
  } catch (const CollectiveError& e) {
    return e.kind();
  } catch (...) {
    return std::nullopt;
  }
}

/// The ranks() of the CollectiveError a rank threw (empty otherwise).
template <typename T>
std::vector<int> error_ranks(const RankOutcome<T>& outcome) {
  if (outcome.ok()) return {};
  try {
    std::rethrow_exception(outcome.error());
  } catch (const CollectiveError& e) {
    return e.ranks();
  } catch (...) {
    return {};
  }
}

}  // namespace ruccl::testing
