#include "collective/transport/group/group_transport.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "collective/protocol/call_record_codec.h"

namespace ruccl {

namespace {

// Agreement frames carry this bit (collective tags are seq << 16, point-to-point tags set bit 63).
constexpr std::uint64_t kAgreementTagBit = std::uint64_t{1} << 62;

// The deadline a call on the parent waits under: the group call's time, label and number for
// messages, but no call number for the parent's hang report (it counts the parent's calls).
Deadline on_parent(const Deadline& d) { return d.on_parent(); }

}  // namespace

GroupTransport::GroupTransport(Transport& parent, std::vector<int> members, std::uint64_t salt,
                               std::string label)
    : parent_(parent), members_(std::move(members)), salt_(salt), label_(std::move(label)) {
  const auto mine = std::find(members_.begin(), members_.end(), parent_.rank());
  RUCCL_ASSERT(mine != members_.end(), "GroupTransport: this rank is not a member of its group");
  rank_ = static_cast<int>(mine - members_.begin());
}

std::size_t GroupTransport::frame_bytes() {
  // Rounded up to whole pieces' alignment, so frames side by side stay aligned.
  return (kMaxEncodedCallRecordBytes + kPieceAlign - 1) / kPieceAlign * kPieceAlign;
}

template <typename Body>
void GroupTransport::forward(Body&& body) {
  try {
    body();
  } catch (const CollectiveError& e) {
    // The parent withdrew this rank's sends before it threw. Ranks: the group's indices.
    std::vector<int> ranks;
    for (int p : e.ranks()) {
      const auto it = std::find(members_.begin(), members_.end(), p);
      if (it != members_.end()) ranks.push_back(static_cast<int>(it - members_.begin()));
    }
    throw CollectiveError(e.kind(), str(label_, ": ", e.what()), std::move(ranks));
  }
}

std::vector<int> GroupTransport::parent_ranks(std::span<const int> peers) const {
  std::vector<int> out(peers.size());
  for (std::size_t i = 0; i < peers.size(); ++i) out[i] = parent_rank(peers[i]);
  return out;
}

void GroupTransport::start_agree(const CallRecord&, const Deadline&) {
  if (parent_.failed()) {
    parent_.withdraw_sends();
    forward([&] { throw parent_.failure(); });
  }
}

void GroupTransport::finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                                  const Deadline& deadline) {
  RUCCL_ASSERT(static_cast<int>(all.size()) == world_size());
  const std::size_t frame = frame_bytes();
  const int world = world_size();
  frames_.assign(frame * static_cast<std::size_t>(world), 0);
  std::vector<std::uint8_t> encoded;
  encode_call_record(mine, encoded);
  RUCCL_ASSERT(encoded.size() <= frame, "an encoded CallRecord is larger than its frame");
  std::uint8_t* own = frames_.data() + frame * static_cast<std::size_t>(rank_);
  std::memcpy(own, encoded.data(), encoded.size());
  std::vector<int> peers;
  std::vector<void*> dsts;
  for (int r = 0; r < world; ++r) {
    if (r == rank_) continue;
    peers.push_back(parent_rank(r));
    dsts.push_back(frames_.data() + frame * static_cast<std::size_t>(r));
  }
  const std::vector<std::size_t> sizes(peers.size(), frame);
  const std::uint64_t tag = (kAgreementTagBit | (mine.seq & 0xFFFFFFFFFFULL)) ^ salt_;
  const Deadline d = on_parent(deadline);
  forward([&] {
    for (int p : peers) parent_.isend(p, tag, own, frame, d);
    parent_.recv_all_into(peers, tag, dsts, sizes, d);
    for (int p : peers) parent_.wait_send(p, d);
  });
  for (int r = 0; r < world; ++r) {
    if (r == rank_) {
      all[static_cast<std::size_t>(r)] = mine;
      continue;
    }
    const std::uint8_t* bytes = frames_.data() + frame * static_cast<std::size_t>(r);
    const std::size_t length = 4 + (std::size_t{bytes[2]} | (std::size_t{bytes[3]} << 8));
    std::string why = length > frame
                          ? str("a record of ", length, " bytes in a frame of ", frame)
                          : decode_call_record({bytes, length}, all[static_cast<std::size_t>(r)]);
    if (!why.empty()) {
      CollectiveError error(
          CollectiveErrorKind::CollectiveKindMismatch,
          str(label_, ": ", deadline.call_name(), ": expected the call record of ", "rank ",
              parent_rank(r), ", got ", why),
          {r});
      parent_.fail(error);
      parent_.withdraw_sends();
      throw error;
    }
  }
}

void GroupTransport::isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                           const Deadline& deadline) {
  forward(
      [&] { parent_.isend(parent_rank(peer), tag ^ salt_, data, nbytes, on_parent(deadline)); });
}

void GroupTransport::wait_send(int peer, const Deadline& deadline) {
  forward([&] { parent_.wait_send(parent_rank(peer), on_parent(deadline)); });
}

void GroupTransport::recv_with(int peer, std::uint64_t tag, std::size_t nbytes,
                               const ConsumeFn& consume, const Deadline& deadline) {
  forward([&] {
    parent_.recv_with(parent_rank(peer), tag ^ salt_, nbytes, consume, on_parent(deadline));
  });
}

void GroupTransport::recv_all_with(std::span<const int> peers, std::uint64_t tag,
                                   std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                                   const Deadline& deadline) {
  const std::vector<int> mapped = parent_ranks(peers);
  forward([&] { parent_.recv_all_with(mapped, tag ^ salt_, sizes, consume, on_parent(deadline)); });
}

void GroupTransport::recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                               const Deadline& deadline) {
  forward(
      [&] { parent_.recv_into(parent_rank(peer), tag ^ salt_, dst, nbytes, on_parent(deadline)); });
}

void GroupTransport::recv_all_into(std::span<const int> peers, std::uint64_t tag,
                                   std::span<void* const> dsts, std::span<const std::size_t> sizes,
                                   const Deadline& deadline) {
  const std::vector<int> mapped = parent_ranks(peers);
  forward([&] { parent_.recv_all_into(mapped, tag ^ salt_, dsts, sizes, on_parent(deadline)); });
}

PeerWait GroupTransport::longest_wait() const noexcept {
  PeerWait wait = parent_.longest_wait();
  const auto it = std::find(members_.begin(), members_.end(), wait.peer);
  wait.peer = it != members_.end() ? static_cast<int>(it - members_.begin()) : -1;
  return wait;
}

}  // namespace ruccl
