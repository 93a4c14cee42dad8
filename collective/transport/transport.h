#pragma once
// Transport: how the ranks of a group reach each other. Algorithms (collective/algorithms/) are
// written only against this interface and a type-erased reduce kernel, so a new transport (TCP,
// later) plugs in without touching them.
//
// Three services:
//  1. agreement: agree() publishes this rank's CallRecord for its next collective and returns every
//     rank's record for the same call (it is also a barrier). It comes in two halves
//     (start_agree, finish_agree) so that a small collective may post its sends in between: its
//     data then travels with its record, one exchange instead of two;
//  2. tagged messages with deadlines: isend / wait_send, and two ways to receive. recv_with /
//     recv_all_with hand a message to a callback that sees the bytes in place, in consecutive
//     pieces of at most kPieceBytes (the in-process transport hands over the sender's own memory,
//     zero copy; a network transport its receive buffer): for folds, which read each byte once.
//     recv_into / recv_all_into land a message in the caller's buffer: for everything that only
//     copies (a copying transport receives straight into it, with no staging). Between pieces the
//     transport checks whether the group failed, so a reader in a long copy stops within one
//     piece;
//  3. failure: fail() finishes the whole group; every pending and later wait on every rank throws.
//
// Buffer lifetime (gloo's UnboundBuffer rule, on every path): a send buffer must stay valid and
// unchanged until wait_send returns or, on any failure path, until withdraw_sends() returns. A
// peer never touches it afterwards. The receiver owns what it consumes into. Every exception a
// transport call throws (a failure it detects, or one a consumer threw) leaves this rank's sends
// withdrawn already: the caller's stack unwinds from the throw, destroying buffers it lent (a
// collective's output, an algorithm's staging) before any catch block could withdraw them. So
// algorithm code between isend and wait_send must not throw by itself (allocate before isend).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "collective/common/collective_error.h"
#include "collective/common/deadline.h"
#include "collective/common/function_ref.h"
#include "collective/protocol/call_record.h"
#include "collective/protocol/pieces.h"
#include "collective/transport/transport_traits.h"
#include "collective/transport/wait_stats.h"

namespace ruccl {

/// Consumes one piece of a received message in place: bytes [offset, offset + nbytes) of the
/// message are at `data`. Pieces come in order, back to back; each but the last is a multiple of
/// kPieceAlign bytes (so a piece never splits an element); a message of 0 bytes is one empty
/// piece. Must not keep the pointer.
using ConsumeFn = FunctionRef<void(std::size_t offset, const void* data, std::size_t nbytes)>;
/// Consumes one piece of the messages from several peers at once: bytes [offset, offset + nbytes)
/// of every message; data[i] points at byte `offset` of the message of peers[i]. A message shorter
/// than offset + nbytes has only piece_bytes(size, offset, nbytes) bytes in this piece (none once
/// offset reaches its size; data[i] is then its end).
using ConsumeManyFn =
    FunctionRef<void(std::size_t offset, std::span<const void* const> data, std::size_t nbytes)>;

/// A rank's connection to the other ranks of its group. One thread uses it at a time, except
/// fail(), failed() and the destructor's leaving notice, which are safe from any thread.
class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// How bytes reach the peers and whether every rank shares this address space
  /// (transport_traits.h); the same on every rank of a group.
  virtual TransportTraits traits() const = 0;

  /// Publishes `mine` (its seq must be this rank's next collective number) and waits until every
  /// rank published its record with the same seq; fills `all` (size world_size, index = rank).
  /// Throws CollectiveError: Timeout (naming the ranks that never arrived), PeerLost, or the
  /// group's failure. The same as start_agree then finish_agree.
  void agree(const CallRecord& mine, std::span<CallRecord> all, const Deadline& deadline) {
    start_agree(mine, deadline);
    finish_agree(mine, all, deadline);
  }
  /// The first half of agree(): publishes `mine` without waiting for anyone. Until finish_agree
  /// the caller may isend the call's messages (they travel behind the record: a receiver meets
  /// them only after the record), but must not receive. If the records then disagree the caller
  /// fails the group, and the early messages are never consumed.
  virtual void start_agree(const CallRecord& mine, const Deadline& deadline) = 0;
  /// The second half of agree(), with the same `mine`: waits for every rank's record.
  virtual void finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                            const Deadline& deadline) = 0;

  /// Starts sending `nbytes` at `data` to `peer` with `tag`. At most one message per direction is
  /// in flight: isend first waits until the previous message to `peer` may be reused (as
  /// wait_send), never for the peer to post its receive of this one. `data` must stay valid and
  /// unchanged until wait_send(peer) (or the next isend to `peer`) returns or, when anything
  /// fails, until withdraw_sends() returns.
  virtual void isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                     const Deadline& deadline) = 0;
  /// Waits until the buffers of every message this rank sent `peer` may be reused: the transport
  /// no longer reads them. It does NOT mean the peer received them (over TCP the bytes are in the
  /// kernel's socket buffer; waiting for the peer would cost a round trip per ring step), so no
  /// algorithm may treat its return as a synchronisation with the peer: ordering between ranks
  /// comes only from messages (and agree()). The in-process transport still returns only once
  /// the peer consumed the message, because the peer reads the sender's memory in place: there
  /// "may be reused" and "consumed" are the same event. That is stronger than the contract, so
  /// it stays correct; tests that need a copying transport's behaviour run the same algorithms
  /// over the fault-injecting wrapper and TCP.
  virtual void wait_send(int peer, const Deadline& deadline) = 0;
  /// Receives the next message from `peer`, which must carry `tag` and `nbytes` bytes, and hands it
  /// to `consume` piece by piece. When the group fails meanwhile it stops between pieces and
  /// throws the failure (the bytes consumed so far are then meaningless).
  virtual void recv_with(int peer, std::uint64_t tag, std::size_t nbytes, const ConsumeFn& consume,
                         const Deadline& deadline) = 0;
  /// Receives the next message from each of `peers` (all with `tag`; sizes[i] bytes from peers[i])
  /// and hands all of them to `consume` at once.
  virtual void recv_all_with(std::span<const int> peers, std::uint64_t tag,
                             std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                             const Deadline& deadline) = 0;
  /// Receives the next message from `peer` (it must carry `tag` and `nbytes` bytes) into
  /// [dst, dst + nbytes). When anything fails it throws like recv_with, and the bytes of `dst`
  /// are then meaningless. The default copies out of recv_with; a copying transport overrides it
  /// to receive straight into `dst`.
  virtual void recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                         const Deadline& deadline) {
    auto* out = static_cast<unsigned char*>(dst);
    recv_with(
        peer, tag, nbytes,
        [&](std::size_t offset, const void* data, std::size_t n) {
          if (n != 0) std::memcpy(out + offset, data, n);
        },
        deadline);
  }
  /// Receives the next message of each of `peers` (sizes[i] bytes with `tag` from peers[i]) into
  /// dsts[i]. The default receives them one by one with recv_into, in the order given (right for
  /// a copying transport, whose kernel buffers the others meanwhile); a transport that reads in
  /// place overrides it to read all of them at once.
  virtual void recv_all_into(std::span<const int> peers, std::uint64_t tag,
                             std::span<void* const> dsts, std::span<const std::size_t> sizes,
                             const Deadline& deadline) {
    for (std::size_t i = 0; i < peers.size(); ++i) {
      recv_into(peers[i], tag, dsts[i], sizes[i], deadline);
    }
  }

  /// Finishes the group with `error` (the first failure wins): every pending and later wait on
  /// every rank throws it. Never throws.
  virtual void fail(const CollectiveError& error) noexcept = 0;
  /// Called by the rank's own thread on every failure path before it releases any buffer it
  /// passed to isend: withdraws every message peers have not consumed, and returns only once no
  /// peer reads one any more (a reader in progress stops within a piece once the group has
  /// failed, so this wait is short and needs no deadline). Never throws.
  virtual void withdraw_sends() noexcept = 0;
  /// Whether the group has failed (fail() ran on any rank).
  virtual bool failed() const noexcept = 0;
  /// The group's first failure; only meaningful when failed().
  virtual CollectiveError failure() const = 0;

  /// Marks the start (and end_point_to_point the end) of a point-to-point send (`sending`) or recv
  /// with `peer`, whose first message is this rank's next one to or from `peer`. Lets a transport
  /// turn a send/recv that can never match (the peer is in a collective, or sends/receives to this
  /// rank at the same time) into CollectiveKindMismatch instead of a wait for the deadline.
  virtual void begin_point_to_point(int peer, bool sending) noexcept {
    (void)peer;
    (void)sending;
  }
  virtual void end_point_to_point() noexcept {}

  /// Whether a collective may isend between start_agree and finish_agree (its messages then travel
  /// behind the record). A group's view of its parent's transport (group/group_transport.h)
  /// exchanges the records in finish_agree, so nothing may go ahead of them there.
  virtual bool carries_sends_with_agreement() const { return true; }

  /// Groups split from this transport's group (Communicator::split). A transport that makes them
  /// itself (MPI: MPI_Comm_split) says so; the others get a GroupTransport view, which opens
  /// nothing. split_natively is called on every rank of this transport, in the same order, after
  /// the split's colors and keys were agreed: it returns this rank's transport of the group of
  /// `color` ordered by `key` (then by rank), or nullptr for a negative color.
  virtual bool splits_natively() const { return false; }
  virtual std::unique_ptr<Transport> split_natively(int color, int key, const Deadline& deadline) {
    (void)color;
    (void)key;
    (void)deadline;
    return nullptr;
  }

  /// Starts (and resets) or stops noting which peer this rank waits on longest (WaitStats); off
  /// by default, so waits cost nothing extra. The core turns it on per call while the trace
  /// records. A transport that cannot tell ignores it.
  virtual void observe_waits(bool on) noexcept { (void)on; }
  /// The peer this rank waited on longest since observe_waits(true), and how long (the trace's
  /// "waited on"); peer -1 when the call never waited or the transport cannot tell.
  virtual PeerWait longest_wait() const noexcept { return PeerWait{}; }
};

}  // namespace ruccl
