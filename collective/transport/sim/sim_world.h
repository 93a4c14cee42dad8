#pragma once
// SimWorld: the state every rank of a simulated group shares (its ranks are threads of this
// process; SimTransport is one rank's view). Two things make it cheap at 1,024 ranks on 2 cores:
//
// One rank runs at a time (a baton). A rank holds the baton from the transport call that gave it
// until it blocks on something that is not there yet (a message, the call's records) or leaves;
// the next holder is the waiting rank with the smallest virtual clock (ties: the lowest rank). No
// rank gets the baton before every rank has made its first transport call (or left), so the order
// in which ranks act, and every virtual time, is the same on every run. The other threads sleep
// on their own condition variable: no spinning, one wake-up per hand-off.
//
// Time is virtual: every rank has a clock that only transport events move, as the LinkModel says
// (link_model.h). Nothing the ranks compute between transport calls costs virtual time except the
// fold of received bytes (gamma, charged on recv_with). Deadlines stay wall-clock ones.
//
// Modes: Checking copies every message's bytes (the algorithms' results are real and checked);
// Timing moves sizes only (no payload is read or written by the transport, consumers of a
// recv_with are never called, so folds do not run): the shape of an algorithm costs its messages,
// not its bytes, and buffers may be left untouched.
//
// A world that can never move again (every live rank waits for something no rank will send) fails
// at once with Timeout, naming what each waits for, instead of waiting for the deadline; a rank
// whose transport is destroyed leaves, and a wait for it fails with PeerLost.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/common/deadline.h"
#include "collective/common/function_ref.h"
#include "collective/common/rank_names.h"
#include "collective/protocol/call_record.h"
#include "collective/transport/sim/busy_calendar.h"
#include "collective/transport/sim/link_model.h"

namespace ruccl {

/// One message in flight between two simulated ranks.
struct SimMessage {
  std::uint64_t tag = 0;
  std::size_t nbytes = 0;
  double arrival = 0;                ///< virtual time it is fully at the receiver
  std::vector<unsigned char> bytes;  ///< the payload (Checking mode only)
};

class SimWorld {
 public:
  SimWorld(int world_size, LinkModel model, SimMode mode, RankNames names = {});

  int world_size() const { return world_; }
  const LinkModel& model() const { return model_; }
  SimMode mode() const { return mode_; }
  const RankNames& names() const { return names_; }
  /// Rank r's virtual clock, seconds since the world began.
  double clock(int rank) const;

  // ---- one rank's transport calls (rank = the caller's); each may throw the group's failure,
  // Timeout or PeerLost -----------------------------------------------------------------------
  /// Publishes this rank's record of its next call (start_agree).
  void publish(int rank, const CallRecord& record, const Deadline& deadline);
  /// Waits for every rank's record with mine.seq (finish_agree).
  void collect(int rank, const CallRecord& mine, std::span<CallRecord> all,
               const Deadline& deadline);
  /// Posts a message (isend); `data` is copied in Checking mode and not read in Timing mode.
  void post(int rank, int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
            const Deadline& deadline);
  /// The sender's buffer is free again (wait_send): its clock moves to the end of the last send.
  void sent(int rank, int peer, const Deadline& deadline);
  /// Takes the next message of each of `peers` (with `tag`, sizes[i] bytes from peers[i]) once
  /// all have arrived; `fold`: the receiver reduces them (charged gamma per byte).
  std::vector<SimMessage> take(int rank, std::span<const int> peers, std::uint64_t tag,
                               std::span<const std::size_t> sizes, bool fold,
                               const Deadline& deadline);

  /// Finishes the group with `error` (the first failure wins) and wakes everyone. Never throws.
  void fail(const CollectiveError& error) noexcept;
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  CollectiveError failure() const;
  /// Rank r's transport was destroyed: a wait for it fails with PeerLost.
  void leave(int rank) noexcept;

 private:
  enum class State : unsigned char { Fresh, Holding, Ready, Blocked, Gone };
  // What a blocked rank waits for: ready() gives the virtual time it is satisfied (nullopt: not
  // yet), missing() the ranks it still waits for.
  struct Waiter {
    FunctionRef<std::optional<double>()> ready;
    FunctionRef<std::vector<int>()> missing;
    const char* what;
  };
  struct Lane {  // one direction of one pair of ranks
    std::vector<SimMessage> queue;
    std::size_t head = 0;
    double send_end = 0;   // when the last message posted on it left its sender
    bool awaited = false;  // its receiver is blocked until a message is posted here
  };
  struct RecordSlot {
    std::uint64_t seq = 0;
    CallRecord record;
  };
  struct Arrivals {  // the records of one call parity
    std::uint64_t seq = 0;
    int count = 0;
    double last = 0;  // virtual time the last record was published
  };
  using Lock = std::unique_lock<std::mutex>;

  Lane& lane(int src, int dst) {
    return lanes_[static_cast<std::size_t>(src) * static_cast<std::size_t>(world_) +
                  static_cast<std::size_t>(dst)];
  }
  /// Waits until `rank` holds the baton (every transport call starts here).
  void acquire(int rank, Lock& lock, const Deadline& deadline);
  /// Hands the baton to the waiting rank with the smallest clock, once nobody holds it and every
  /// rank has arrived; fails the world when nothing can ever move again.
  void schedule();
  /// Blocks the holder `rank` until waiter.ready() (its clock then moves there), giving the baton
  /// away meanwhile.
  void block(int rank, const Waiter& waiter, Lock& lock, const Deadline& deadline);
  /// Rechecks what blocked `rank` waits for (after an event that may satisfy it).
  void wake(int rank);
  /// Fails the world with PeerLost when a rank of `missing` left (`prefix`: the call's name);
  /// returns whether it did.
  bool fail_if_lost(int rank, const std::vector<int>& missing, const char* what,
                    const std::string& prefix);
  /// Throws the failure, PeerLost (a rank of `missing` left) or Timeout after `deadline`.
  void check_wait(int rank, const std::vector<int>& missing, const char* what,
                  const Deadline& deadline, bool expired);
  /// Wakes every rank that sleeps in a transport call (mu_ held).
  void notify_waiters();
  /// Records the first failure (mu_ held) and wakes every sleeper.
  void fail_locked(const CollectiveError& error);

  const int world_;
  const LinkModel model_;
  const SimMode mode_;
  const RankNames names_;

  mutable std::mutex mu_;
  std::vector<State> state_;
  std::vector<double> clock_;
  std::vector<const Waiter*> waiting_;
  std::vector<int> awaiting_;  // per rank blocked in take(): lanes still empty (awaited)
  std::unique_ptr<std::condition_variable[]> wakeup_;
  std::set<std::pair<double, int>> ready_;  // (clock, rank) of ranks waiting for the baton
  int holder_ = -1;
  int fresh_;  // ranks that have not made a transport call yet (nor left)

  std::vector<Lane> lanes_;            // world x world
  std::vector<double> port_out_;       // per rank: when its send port is free (its own order)
  std::vector<BusyCalendar> port_in_;  // per rank: its receive port
  std::vector<BusyCalendar> nic_out_, nic_in_;  // per host
  std::vector<RecordSlot> records_;             // rank * 2 + parity
  std::vector<double> cpu_scale_;               // per host: LinkModel::cpu_scale
  Arrivals arrivals_[2];

  std::atomic<bool> failed_{false};
  std::optional<CollectiveError> failure_;
};

}  // namespace ruccl
