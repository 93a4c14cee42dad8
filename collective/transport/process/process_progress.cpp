// The process transport's progress: what its wait loop (process_progress.h) does each round, and
// how it sleeps.
#include <sched.h>

#include <algorithm>

#include "collective/transport/process/process_progress.h"

namespace ruccl {

void TcpTransport::progress_all() {
  for (int p = 0; p < world_; ++p) {
    if (p != rank_) check_step(p, path(p).progress_sends());
  }
}

bool TcpTransport::advance(PathReceive& r) {
  if (r.done) return true;
  const PathStep step = path(r.peer).advance(r);
  check_step(r.peer, step);
  return step == PathStep::Done;
}

std::uint64_t TcpTransport::bytes_moved() const {
  std::uint64_t moved = 0;
  for (const auto& path : paths_) {
    if (path) moved += path->bytes_moved();
  }
  return moved;
}

void TcpTransport::sleep(const std::vector<int>& readers, const Deadline& deadline) {
  auto reading = [&](int p) {
    return std::find(readers.begin(), readers.end(), p) != readers.end();
  };
  // Every path raises what makes its peer wake this rank (none may skip: a flag left down is a
  // wake-up lost); one that moved meanwhile means no sleep.
  bool quiet = true;
  for (int p = 0; p < world_; ++p) {
    if (p != rank_ && !path(p).prepare_to_sleep(reading(p))) quiet = false;
  }
  if (!quiet) return;  // spin again
  poll_set_.clear();
  poll_set_.add(state_->wake_fd(), POLLIN);  // index 0
  for (int p = 0; p < world_; ++p) {
    if (p != rank_) path(p).arm(poll_set_, reading(p));
  }
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline.at() - Deadline::Clock::now());
  poll_set_.wait(static_cast<int>(std::clamp<long long>(left.count(), 1, 100)));
  if (poll_set_.revents(0) & POLLIN) state_->drain_wake();
  try {
    for (int p = 0; p < world_; ++p) {
      if (p != rank_) check_step(p, path(p).woke(poll_set_, reading(p)));
    }
  } catch (const CollectiveError& e) {
    fail_and_throw(e);
  }
}

void TcpTransport::receive_all(std::span<PathReceive> receives, const Deadline& deadline,
                               const char* what) {
  std::vector<int> readers;
  auto step = [&] {
    bool all = true;
    readers.clear();  // sleep only on the peers still missing
    for (PathReceive& r : receives) {
      if (!advance(r)) {
        all = false;
        readers.push_back(r.peer);
      }
    }
    return all;
  };
  auto missing = [&] { return readers; };
  drive(step, readers, missing, deadline, what);
}

}  // namespace ruccl
