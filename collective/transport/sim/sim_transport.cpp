#include "collective/transport/sim/sim_transport.h"

#include <algorithm>
#include <cstring>

namespace ruccl {

SimTransport::SimTransport(std::shared_ptr<SimWorld> world, int rank)
    : world_(std::move(world)), rank_(rank) {}

SimTransport::~SimTransport() { world_->leave(rank_); }

void SimTransport::start_agree(const CallRecord& mine, const Deadline& deadline) {
  world_->publish(rank_, mine, deadline);
}

void SimTransport::finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                                const Deadline& deadline) {
  RUCCL_ASSERT(static_cast<int>(all.size()) == world_size());
  world_->collect(rank_, mine, all, deadline);
}

void SimTransport::isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                         const Deadline& deadline) {
  world_->post(rank_, peer, tag, data, nbytes, deadline);
}

void SimTransport::wait_send(int peer, const Deadline& deadline) {
  world_->sent(rank_, peer, deadline);
}

void SimTransport::consume_pieces(std::span<const SimMessage> messages, std::size_t total,
                                  const ConsumeManyFn& consume, const Deadline& deadline) {
  std::vector<const void*> data(messages.size());
  std::size_t offset = 0;
  try {
    do {
      const std::size_t n = std::min(kPieceBytes, total - offset);
      for (std::size_t i = 0; i < messages.size(); ++i) {
        const SimMessage& m = messages[i];
        data[i] = m.bytes.data() + std::min(offset, m.bytes.size());
      }
      consume(offset, data, n);
      offset += n;
    } while (offset < total && !world_->failed());
  } catch (...) {  // the consumer threw: fail the group, so nobody waits for this rank
    world_->fail(current_exception_as_collective_error(
        str(deadline.call_name(), ": ", world_->names().name(rank_)), rank_));
    throw;
  }
  if (offset < total) throw world_->failure();
}

void SimTransport::recv_with(int peer, std::uint64_t tag, std::size_t nbytes,
                             const ConsumeFn& consume, const Deadline& deadline) {
  const int peers[1] = {peer};
  const std::size_t sizes[1] = {nbytes};
  recv_all_with(
      peers, tag, sizes,
      [&](std::size_t offset, std::span<const void* const> data, std::size_t n) {
        consume(offset, data[0], n);
      },
      deadline);
}

void SimTransport::recv_all_with(std::span<const int> peers, std::uint64_t tag,
                                 std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                                 const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == sizes.size());
  const std::vector<SimMessage> messages =
      world_->take(rank_, peers, tag, sizes, /*fold=*/true, deadline);
  if (world_->mode() == SimMode::Timing) return;  // sizes only: nothing to fold
  std::size_t total = 0;
  for (std::size_t s : sizes) total = std::max(total, s);
  consume_pieces(messages, total, consume, deadline);
}

void SimTransport::recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                             const Deadline& deadline) {
  void* const dsts[1] = {dst};
  const int peers[1] = {peer};
  const std::size_t sizes[1] = {nbytes};
  recv_all_into(peers, tag, dsts, sizes, deadline);
}

void SimTransport::recv_all_into(std::span<const int> peers, std::uint64_t tag,
                                 std::span<void* const> dsts, std::span<const std::size_t> sizes,
                                 const Deadline& deadline) {
  RUCCL_ASSERT(peers.size() == dsts.size() && peers.size() == sizes.size());
  const std::vector<SimMessage> messages =
      world_->take(rank_, peers, tag, sizes, /*fold=*/false, deadline);
  if (world_->mode() == SimMode::Timing) return;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (sizes[i] != 0) std::memcpy(dsts[i], messages[i].bytes.data(), sizes[i]);
  }
}

}  // namespace ruccl
