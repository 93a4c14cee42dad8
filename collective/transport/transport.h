#pragma once
// Transport: how the ranks of a group reach each other. Algorithms (collective/algorithms/) are
// written only against this interface and a type-erased reduce kernel, so a new transport (TCP,
// later) plugs in without touching them.
//
// Three services:
//  1. agreement: agree() publishes this rank's CallRecord for its next collective and returns every
//     rank's record for the same call (it is also a barrier);
//  2. tagged messages with deadlines: isend / wait_send / recv_with / recv_all_with. Receivers
//     *consume* a message through a callback that sees the bytes in place, in consecutive pieces
//     of at most kPieceBytes: the in-process transport hands over the sender's own memory (zero
//     copy), a network transport its receive buffer. Between pieces the transport checks whether
//     the group failed, so a reader in a long copy stops within one piece;
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
#include <memory>
#include <span>
#include <type_traits>
#include <utility>

#include "collective/collective_error.h"
#include "collective/transport/call_record.h"
#include "collective/transport/deadline.h"

namespace ruccl {

/// A non-owning reference to a callable (no allocation, unlike std::function): valid only while
/// the referenced callable lives, which is the duration of the transport call it is passed to.
template <typename Signature>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
           std::is_invocable_r_v<R, F&, Args...>)
      FunctionRef(F&& f)  // NOLINT: implicit, like std::function
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

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

/// Pieces are at most this long (a reader notices a failed group within one piece: ~25 us of
/// memcpy) and, but the last, a multiple of kPieceAlign (the largest element size divides it).
inline constexpr std::size_t kPieceBytes = std::size_t{256} << 10;
inline constexpr std::size_t kPieceAlign = 64;

/// How many bytes of a `size`-byte message lie in the piece [offset, offset + nbytes).
inline std::size_t piece_bytes(std::size_t size, std::size_t offset, std::size_t nbytes) {
  return offset >= size ? 0 : (size - offset < nbytes ? size - offset : nbytes);
}

/// A rank's connection to the other ranks of its group. One thread uses it at a time, except
/// fail(), failed() and the destructor's leaving notice, which are safe from any thread.
class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// Whether receivers read the sender's memory in place (in process). Only steers the choice of
  /// algorithm (CommunicatorOptions, Algorithm::Auto).
  virtual bool zero_copy() const { return false; }

  /// Publishes `mine` (its seq must be this rank's next collective number) and waits until every
  /// rank published its record with the same seq; fills `all` (size world_size, index = rank).
  /// Throws CollectiveError: Timeout (naming the ranks that never arrived), PeerLost, or the
  /// group's failure.
  virtual void agree(const CallRecord& mine, std::span<CallRecord> all,
                     const Deadline& deadline) = 0;

  /// Starts sending `nbytes` at `data` to `peer` with `tag` (waits only while this rank's previous
  /// message to `peer` is unconsumed). `data` must stay valid until wait_send(peer) returns or,
  /// when anything fails, until withdraw_sends() returns.
  virtual void isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                     const Deadline& deadline) = 0;
  /// Waits until `peer` has consumed every message this rank sent it.
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
};

}  // namespace ruccl
