#pragma once
// GroupTransport: the transport of a group split from a parent (Communicator::split), as a view of
// the parent's transport. It opens nothing: a group rank's messages travel on the parent's links
// to the parent rank it maps to, with tags of the group's own space (the parent's tag XOR the
// group's salt, so a message of one group met by a receive of another is a tag mismatch, never a
// silent mix-up). Its agreement is its own: each rank sends its encoded CallRecord to every other
// rank of the group, in a fixed-size frame, and receives theirs (the parent's agreement channel is
// the whole parent's). Failure is the parent's: a group shares the parent's links, and a failure
// in the middle of a message leaves a link no one can use again, so fail() fails the parent, and
// a failure anywhere in the family (the parent, any group of it) finishes every group of it.
//
// One thread at a time per rank uses a parent transport and all its views: CommunicatorCore gives
// the calls of a parent and its groups turns in each rank's program order (core/rank_turns.h).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collective/transport/transport.h"

namespace ruccl {

class GroupTransport final : public Transport {
 public:
  /// This rank's view of `parent` for the group whose ranks are the parent ranks `members` (index
  /// = group rank; this rank's parent rank is among them). `salt`: the group's tag space (the
  /// same on every member, different for every group of a parent: derived from the split's call
  /// number and color). `label`: "group tp (parent ranks [0, 1])", prefixed to the errors it
  /// raises. `parent` must outlive the view.
  GroupTransport(Transport& parent, std::vector<int> members, std::uint64_t salt,
                 std::string label);

  int rank() const override { return rank_; }
  int world_size() const override { return static_cast<int>(members_.size()); }
  TransportTraits traits() const override { return parent_.traits(); }
  /// The record exchange runs in finish_agree: nothing may travel ahead of it.
  bool carries_sends_with_agreement() const override { return false; }
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
  void recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                 const Deadline& deadline) override;
  void recv_all_into(std::span<const int> peers, std::uint64_t tag, std::span<void* const> dsts,
                     std::span<const std::size_t> sizes, const Deadline& deadline) override;
  void fail(const CollectiveError& error) noexcept override { parent_.fail(error); }
  void withdraw_sends() noexcept override { parent_.withdraw_sends(); }
  bool failed() const noexcept override { return parent_.failed(); }
  CollectiveError failure() const override { return parent_.failure(); }
  void begin_point_to_point(int peer, bool sending) noexcept override {
    parent_.begin_point_to_point(parent_rank(peer), sending);
  }
  void end_point_to_point() noexcept override { parent_.end_point_to_point(); }
  void observe_waits(bool on) noexcept override { parent_.observe_waits(on); }
  PeerWait longest_wait() const noexcept override;

  /// The parent rank of group rank `r`.
  int parent_rank(int r) const { return members_[static_cast<std::size_t>(r)]; }
  const std::vector<int>& members() const { return members_; }
  /// The bytes of one agreement frame (an encoded record, zero-padded).
  static std::size_t frame_bytes();

 private:
  /// Runs `body` (a call on the parent), prefixing the label to a CollectiveError it throws.
  template <typename Body>
  void forward(Body&& body);
  std::vector<int> parent_ranks(std::span<const int> peers) const;

  Transport& parent_;
  std::vector<int> members_;
  std::uint64_t salt_;
  std::string label_;
  int rank_ = -1;
  std::vector<std::uint8_t> frames_;  // this rank's frame, then one per rank received
};

}  // namespace ruccl
