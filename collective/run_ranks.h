#pragma once
// run_ranks: one thread per rank of an in-process group, with failures handled the way every
// multi-rank driver needs: a rank that throws aborts its communicator, so the other ranks fail
// promptly instead of waiting for their deadline; the first failure is printed at once on stderr
// (so a rank stuck in its own code never leaves a silent hang); after every thread has ended, the
// root cause is rethrown.
//
//   std::vector<double> loss(4);
//   run_ranks(InProcessGroup::create(4), [&](Communicator& comm) {
//     loss[comm.rank()] = train(comm);
//   });
//
// Each rank thread draws from its own default generator (ThreadDefaultGenerator,
// tensor/random/thread_default_generator.h): a copy of the calling thread's as it stands when
// run_ranks starts, so replicas built from the default generator are identical on every rank.
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <vector>

#include "collective/communicator.h"

namespace ruccl {

/// How run_ranks treats ranks that do not end after another rank failed.
struct RunRanksOptions {
  /// After the first rank failed, how long to wait for the others to end. std::nullopt (the
  /// default): wait for every thread, however long (a rank stuck in its own code, not in a
  /// collective, is then never joined: run_ranks prints on stderr which ranks it waits for).
  /// A duration: once it has passed, run_ranks stops waiting and throws; the threads still
  /// running are detached (their communicators are aborted and stay alive with them, so they
  /// fail at their next collective) and the error says which ranks they are. Whatever a
  /// detached rank's fn refers to must outlive it: give up only when the process ends soon after.
  std::optional<std::chrono::milliseconds> give_up_after;

  /// Sets give_up_after.
  RunRanksOptions& with_give_up_after(std::chrono::milliseconds grace) {
    give_up_after = grace;
    return *this;
  }
};

/// Runs fn(comms[r]) on thread r and joins them all. Each thread owns its communicator (moved in
/// and released when fn returns, so peers still waiting on a finished rank fail with PeerLost
/// rather than at the deadline) and its own default generator (see the file comment). When fn
/// throws on a rank, that rank's communicator is aborted with "rank R failed: <what>", and the
/// first such failure is printed at once on stderr in one line:
///
///   run_ranks: rank 1 failed: <what> (ranks still running: 0, 2)
///
/// Once all threads ended, root_cause() of the errors is rethrown. With options.give_up_after
/// set and ranks still running that long after the first failure: CollectiveError(Timeout)
/// "run_ranks: gave up on rank(s) ... (their threads are detached, still running) N ms after
/// rank R failed: <root cause>", its ranks() the abandoned ranks, with the root cause nested
/// (std::rethrow_if_nested).
void run_ranks(std::vector<Communicator> comms, const std::function<void(Communicator&)>& fn,
               RunRanksOptions options = {});

/// The error to report from one per rank (null entries: ranks that succeeded): the first, by
/// rank, that is not a CollectiveError of kind Aborted or PeerLost (those are what an abort
/// causes elsewhere), else the first. Null when every entry is null.
std::exception_ptr root_cause(const std::vector<std::exception_ptr>& errors);

}  // namespace ruccl
