#pragma once
// SimTransport: one rank's Transport into a SimWorld (sim_world.h): ranks on a virtual clock, one
// running at a time, messages costed by a LinkModel. A copying transport: isend copies the
// payload (Checking mode) or only its size (Timing mode), so wait_send never waits for the peer;
// receives land in the caller's buffer. The link kind it reports is Copying (Auto then chooses as
// it would over TCP).
#include <memory>

#include "collective/transport/sim/sim_world.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// Rank `rank`'s transport into a shared SimWorld. Destroying it makes the rank leave (a peer
/// waiting for it gets PeerLost).
class SimTransport final : public Transport {
 public:
  SimTransport(std::shared_ptr<SimWorld> world, int rank);
  ~SimTransport() override;

  int rank() const override { return rank_; }
  int world_size() const override { return world_->world_size(); }
  TransportTraits traits() const override {
    return TransportTraits{LinkKind::Copying, /*same_address_space=*/true};
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
  void recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                 const Deadline& deadline) override;
  void recv_all_into(std::span<const int> peers, std::uint64_t tag, std::span<void* const> dsts,
                     std::span<const std::size_t> sizes, const Deadline& deadline) override;
  void fail(const CollectiveError& error) noexcept override { world_->fail(error); }
  /// Nothing to withdraw: every send was copied when it was posted.
  void withdraw_sends() noexcept override {}
  bool failed() const noexcept override { return world_->failed(); }
  CollectiveError failure() const override { return world_->failure(); }

  /// This rank's virtual clock, seconds.
  double clock() const { return world_->clock(rank_); }
  const std::shared_ptr<SimWorld>& world() const { return world_; }

 private:
  /// Hands the received messages to `consume` piece by piece (Checking mode; stops with the
  /// group's failure between pieces; a throwing consumer fails the group).
  void consume_pieces(std::span<const SimMessage> messages, std::size_t total,
                      const ConsumeManyFn& consume, const Deadline& deadline);

  std::shared_ptr<SimWorld> world_;
  int rank_;
};

}  // namespace ruccl
