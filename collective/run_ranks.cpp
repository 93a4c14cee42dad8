#include "collective/run_ranks.h"

#include <thread>

#include "collective/common/collective_error.h"

namespace ruccl {

void run_ranks(std::vector<Communicator> comms, const std::function<void(Communicator&)>& fn) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  threads.reserve(comms.size());
  for (std::size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      Communicator comm = std::move(comms[r]);
      try {
        fn(comm);
      } catch (const std::exception& e) {
        errors[r] = std::current_exception();
        comm.abort(str("rank ", r, " failed: ", e.what()));
      } catch (...) {
        errors[r] = std::current_exception();
        comm.abort(str("rank ", r, " failed"));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (std::exception_ptr e = root_cause(errors)) std::rethrow_exception(e);
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
