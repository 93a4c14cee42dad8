#pragma once
// run_ranks: one thread per rank of an in-process group, with failures handled the way every
// multi-rank driver needs: a rank that throws aborts its communicator, so the other ranks fail
// promptly instead of waiting for their deadline; after every thread has ended, the root cause is
// rethrown.
//
//   std::vector<double> loss(4);
//   run_ranks(InProcessGroup::create(4), [&](Communicator& comm) {
//     loss[comm.rank()] = train(comm);
//   });
#include <exception>
#include <functional>
#include <vector>

#include "collective/communicator.h"

namespace ruccl {

/// Runs fn(comms[r]) on thread r and joins them all. Each thread owns its communicator (moved in
/// and released when fn returns, so peers still waiting on a finished rank fail with PeerLost
/// rather than at the deadline). When fn throws on a rank, that rank's communicator is aborted
/// with "rank R failed: <what>"; once all threads ended, root_cause() of the errors is rethrown.
void run_ranks(std::vector<Communicator> comms, const std::function<void(Communicator&)>& fn);

/// The error to report from one per rank (null entries: ranks that succeeded): the first, by
/// rank, that is not a CollectiveError of kind Aborted or PeerLost (those are what an abort
/// causes elsewhere), else the first. Null when every entry is null.
std::exception_ptr root_cause(const std::vector<std::exception_ptr>& errors);

}  // namespace ruccl
