#pragma once
// The in-process transport: the ranks of a group are threads of one process and share an
// InProcessHub. Records are published in per-rank slots (double-buffered by call parity, so no
// closing barrier is needed); a message is a pointer to the sender's memory that the receiver
// consumes in place (zero copy), then acknowledges.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "collective/common/rank_names.h"
#include "collective/transport/in_process/doorbell.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// State shared by all ranks of one in-process group.
class InProcessHub {
 public:
  /// `names`: how error messages name the ranks (default "rank r").
  explicit InProcessHub(int world_size, RankNames names = {});

  int world_size() const { return world_size_; }
  const RankNames& names() const { return names_; }

  /// Rank r's published record for parity p, and the seq it belongs to.
  struct alignas(64) RecordSlot {
    std::atomic<std::uint64_t> seq{0};  // 0: nothing published yet (calls count from 1)
    CallRecord record;
  };
  /// One direction of one pair of ranks: at most one message in flight. Reading the sender's
  /// memory is guarded by a handshake (seq_cst on both sides, Dekker style): the receiver
  /// announces the message number it reads in `reading`, then checks `withdrawn`; a failing
  /// sender sets `withdrawn`, then waits until `reading` is 0. So either the receiver sees the
  /// withdrawal and never touches the buffer, or the sender sees the reader and waits for it.
  struct alignas(64) Mailbox {
    std::atomic<std::uint64_t> posted{0};
    std::atomic<std::uint64_t> consumed{0};
    std::atomic<std::uint64_t> reading{0};    // the message being read (0: none)
    std::atomic<std::uint64_t> withdrawn{0};  // messages up to this number are withdrawn
    std::atomic<bool> cut{false};  // the link between these two ranks is broken (cut_link)
    std::uint64_t tag = 0;
    const void* data = nullptr;
    std::size_t nbytes = 0;
  };
  struct alignas(64) RankState {
    RecordSlot records[2];
    std::atomic<bool> gone{false};
    /// The point-to-point call this rank is in (0: none); see encode_p2p.
    std::atomic<std::uint64_t> p2p{0};
  };

  RankState& rank_state(int r) { return ranks_[static_cast<std::size_t>(r)]; }
  Mailbox& mailbox(int src, int dst) {
    return mail_[static_cast<std::size_t>(src) * static_cast<std::size_t>(world_size_) +
                 static_cast<std::size_t>(dst)];
  }
  Doorbell& bell() { return bell_; }
  const WaitPolicy& policy() const { return policy_; }

  /// Marks rank `rank` as gone (its transport was destroyed) and wakes every waiter.
  void leave(int rank) noexcept;
  /// Breaks the link between ranks a and b (both directions), as a network transport's broken
  /// connection: a wait of either for the other fails with PeerLost naming the other. Only the
  /// fault-injecting transport's Cut uses it (through its cut hook).
  void cut_link(int a, int b) noexcept;
  /// Whether the link between a and b was cut.
  bool link_cut(int a, int b) noexcept {
    return mailbox(a, b).cut.load(std::memory_order_acquire) ||
           mailbox(b, a).cut.load(std::memory_order_acquire);
  }
  /// Whether any rank has left (or any link was cut).
  bool anyone_gone() const noexcept { return anyone_gone_.load(std::memory_order_acquire); }
  /// Records the first failure and wakes every waiter.
  void fail(const CollectiveError& error) noexcept;
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  CollectiveError failure() const;

 private:
  int world_size_;
  RankNames names_;
  WaitPolicy policy_;
  std::unique_ptr<RankState[]> ranks_;
  std::unique_ptr<Mailbox[]> mail_;
  Doorbell bell_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> anyone_gone_{false};
  mutable std::mutex failure_mutex_;
  std::optional<CollectiveError> failure_;
};

/// Rank `rank`'s Transport over a shared InProcessHub. Destroying it tells the peers this rank
/// left: a peer waiting for it gets PeerLost.
class InProcessTransport final : public Transport {
 public:
  InProcessTransport(std::shared_ptr<InProcessHub> hub, int rank);
  ~InProcessTransport() override;

  int rank() const override { return rank_; }
  int world_size() const override { return hub_->world_size(); }
  TransportTraits traits() const override {
    return TransportTraits{LinkKind::InProcess, /*same_address_space=*/true};
  }
  void start_agree(const CallRecord& mine, const Deadline& deadline) override;
  void finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                    const Deadline& deadline) override;
  void isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
             const Deadline& deadline) override;
  void wait_send(int peer, const Deadline& deadline) override;
  void recv_with(int peer, std::uint64_t tag, std::size_t nbytes, const ConsumeFn& consume,
                 const Deadline& deadline) override;
  void recv_all_with(std::span<const int> peers, std::uint64_t tag,
                     std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                     const Deadline& deadline) override;
  /// Reads every sender's memory in place at once (recv_all_with), copying into dsts.
  void recv_all_into(std::span<const int> peers, std::uint64_t tag, std::span<void* const> dsts,
                     std::span<const std::size_t> sizes, const Deadline& deadline) override;
  void fail(const CollectiveError& error) noexcept override { hub_->fail(error); }
  void withdraw_sends() noexcept override;
  bool failed() const noexcept override { return hub_->failed(); }
  CollectiveError failure() const override { return hub_->failure(); }
  void begin_point_to_point(int peer, bool sending) noexcept override;
  void end_point_to_point() noexcept override;
  void observe_waits(bool on) noexcept override { waits_.observe(on); }
  PeerWait longest_wait() const noexcept override { return waits_.longest(); }

 private:
  /// Waits for ready(); throws the group's failure, PeerLost (a rank in `peers` left) or Timeout
  /// (naming missing(), the ranks that never arrived).
  template <typename Ready, typename Missing>
  void wait_for(Ready&& ready, Missing&& missing, const Deadline& deadline, const char* what);
  /// Withdraws this rank's sends, then throws the group's failure (every throw goes through it).
  [[noreturn]] void throw_failure();
  /// Fails the group with the exception in flight (a consumer's), then withdraws this rank's
  /// sends. Call inside a catch block.
  void fail_from_current_exception(const Deadline& deadline) noexcept;
  /// A point-to-point call of `peer` that waits for this rank while this rank cannot serve it
  /// (`in_collective`: this rank waits in agree(); else this rank is in its own send/recv): the
  /// description of the deadlock, or "" when there is none.
  std::string p2p_deadlock(int peer, bool in_collective) const;
  /// The hang report ("; calls reached: ...") of a collective's timeout; "" for point-to-point.
  std::string calls_reached(const Deadline& deadline) const;
  /// Checks the message header a sender posted against what the receiver expects.
  void check_message(int peer, const InProcessHub::Mailbox& box, std::uint64_t tag,
                     std::size_t nbytes);
  /// Claims the next message of each of `peers` for reading (see Mailbox); throws the group's
  /// failure (releasing the claims made) when the group failed or a sender withdrew.
  void claim(std::span<const int> peers);
  /// Releases the claims of `peers`; `consumed`: also marks their messages consumed.
  void release(std::span<const int> peers, bool consumed) noexcept;
  /// Calls piece(offset, n) for the consecutive pieces of [0, total) (one empty piece when total
  /// is 0), stopping early when the group fails; then releases the claims of `peers` (marking
  /// the messages consumed when complete) and throws the failure when it stopped early. Releases
  /// on every path; a throwing piece fails the group and withdraws this rank's sends.
  template <typename Piece>
  void read_pieces(std::span<const int> peers, std::size_t total, const Deadline& deadline,
                   Piece&& piece);

  std::shared_ptr<InProcessHub> hub_;
  int rank_;
  std::vector<std::uint64_t> sent_;      // messages posted to each peer
  std::vector<std::uint64_t> received_;  // messages consumed from each peer
  bool p2p_sending_ = false;             // valid while my own p2p state is published
  int p2p_peer_ = -1;
  WaitStats waits_;
};

}  // namespace ruccl
