#include "collective/run_ranks.h"

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "collective/common/collective_error.h"
#include "tensor/random/thread_default_generator.h"

namespace ruccl {
namespace {

/// How long run_ranks waits after a failure before it says on stderr which ranks it waits for.
constexpr std::chrono::seconds kStillWaitingNotice{2};

/// "0, 2, 3"
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (const int r : ranks) out += str(out.empty() ? "" : ", ", r);
  return out;
}

/// What the rank threads share with run_ranks. Held by shared_ptr by every thread, so a thread
/// run_ranks gave up on (detached) keeps its communicator, fn and error slot alive.
struct RankThreads {
  RankThreads(std::vector<Communicator> comms_in, std::function<void(Communicator&)> fn_in)
      : comms(std::move(comms_in)),
        fn(std::move(fn_in)),
        errors(comms.size()),
        ended(comms.size(), false),
        running(comms.size()) {}

  std::vector<Communicator> comms;
  const std::function<void(Communicator&)> fn;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::exception_ptr> errors;  // guarded by mutex
  std::vector<bool> ended;                 // guarded by mutex
  std::size_t running;                     // guarded by mutex
  int first_failed = -1;                   // guarded by mutex
  std::chrono::steady_clock::time_point failed_at;

  /// The ranks whose thread has not ended, `except` left out. Needs mutex held.
  std::vector<int> still_running(int except = -1) const {
    std::vector<int> out;
    for (std::size_t r = 0; r < ended.size(); ++r) {
      if (!ended[r] && static_cast<int>(r) != except) out.push_back(static_cast<int>(r));
    }
    return out;
  }

  /// Records rank r's error; the first failure is printed at once.
  void fail(std::size_t r, std::exception_ptr error, const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    errors[r] = std::move(error);
    if (first_failed >= 0) return;
    first_failed = static_cast<int>(r);
    failed_at = std::chrono::steady_clock::now();
    const std::vector<int> others = still_running(first_failed);
    std::cerr << "run_ranks: rank " << r << " failed: " << what
              << (others.empty() ? std::string(" (no other rank still running)")
                                 : str(" (ranks still running: ", rank_list(others), ")"))
              << std::endl;
  }

  /// The body of rank r's thread.
  void run(std::size_t r, const Generator& start) {
    ThreadDefaultGenerator generator(start);
    {
      Communicator comm = std::move(comms[r]);
      try {
        fn(comm);
      } catch (const std::exception& e) {
        fail(r, std::current_exception(), e.what());
        comm.abort(str("rank ", r, " failed: ", e.what()));
      } catch (...) {
        fail(r, std::current_exception(), "an exception not derived from std::exception");
        comm.abort(str("rank ", r, " failed"));
      }
    }  // the communicator is released before the rank counts as ended (see run_ranks.h)
    std::lock_guard<std::mutex> lock(mutex);
    ended[r] = true;
    --running;
    changed.notify_all();
  }
};

}  // namespace

void run_ranks(std::vector<Communicator> comms, const std::function<void(Communicator&)>& fn,
               RunRanksOptions options) {
  const Generator start = with_default_generator([](Generator& g) { return g; });
  auto shared = std::make_shared<RankThreads>(std::move(comms), fn);
  std::vector<std::thread> threads;
  threads.reserve(shared->comms.size());
  for (std::size_t r = 0; r < shared->comms.size(); ++r) {
    threads.emplace_back([shared, r, start] { shared->run(r, start); });
  }
  std::unique_lock<std::mutex> lock(shared->mutex);
  bool noticed = false;
  while (shared->running > 0) {
    if (shared->first_failed < 0) {
      shared->changed.wait(lock);
      continue;
    }
    std::optional<std::chrono::steady_clock::time_point> wake;
    if (!noticed) wake = shared->failed_at + kStillWaitingNotice;
    if (options.give_up_after) {
      const auto give_up = shared->failed_at + *options.give_up_after;
      if (!wake || give_up < *wake) wake = give_up;
    }
    if (!wake) {
      shared->changed.wait(lock);
      continue;
    }
    if (shared->changed.wait_until(lock, *wake) == std::cv_status::no_timeout) continue;
    const auto now = std::chrono::steady_clock::now();
    if (shared->running == 0) break;
    if (options.give_up_after && now >= shared->failed_at + *options.give_up_after) break;
    if (!noticed && now >= shared->failed_at + kStillWaitingNotice) {
      noticed = true;
      std::cerr << "run_ranks: still waiting for rank(s) " << rank_list(shared->still_running())
                << " " << kStillWaitingNotice.count() << " s after rank " << shared->first_failed
                << " failed (a rank busy in its own code, not in a collective, is not "
                << "interrupted; RunRanksOptions::give_up_after stops waiting)" << std::endl;
    }
  }
  const std::vector<int> abandoned = shared->still_running();
  const std::vector<std::exception_ptr> errors = shared->errors;
  const int first_failed = shared->first_failed;
  lock.unlock();
  for (std::size_t r = 0; r < threads.size(); ++r) {
    if (std::find(abandoned.begin(), abandoned.end(), static_cast<int>(r)) != abandoned.end()) {
      threads[r].detach();  // it holds `shared`: its communicator and fn stay alive
    } else {
      threads[r].join();
    }
  }
  const std::exception_ptr cause = root_cause(errors);
  if (abandoned.empty()) {
    if (cause) std::rethrow_exception(cause);
    return;
  }
  try {
    std::rethrow_exception(cause);
  } catch (const std::exception& e) {
    std::throw_with_nested(CollectiveError(
        CollectiveErrorKind::Timeout,
        str("run_ranks: gave up on rank(s) ", rank_list(abandoned),
            " (their threads are detached, still running) ", options.give_up_after->count(),
            " ms after rank ", first_failed, " failed: ", e.what()),
        abandoned));
  } catch (...) {
    std::throw_with_nested(CollectiveError(
        CollectiveErrorKind::Timeout,
        str("run_ranks: gave up on rank(s) ", rank_list(abandoned),
            " (their threads are detached, still running) ", options.give_up_after->count(),
            " ms after rank ", first_failed, " failed"),
        abandoned));
  }
}

std::exception_ptr root_cause(const std::vector<std::exception_ptr>& errors) {
  std::exception_ptr first;
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    if (!first) first = e;
    try {
      std::rethrow_exception(e);
    } catch (const CollectiveError& ce) {
      if (ce.kind() != CollectiveErrorKind::Aborted && ce.kind() != CollectiveErrorKind::PeerLost) {
        return e;
      }
    } catch (...) {
      return e;
    }
  }
  return first;
}

}  // namespace ruccl
