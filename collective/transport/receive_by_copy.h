#pragma once
// recv_all_with for a copying transport (TCP): messages land in a buffer the transport owns, so
// handing several of them to one consumer at once needs them side by side in memory first.
//
//   void TcpTransport::recv_all_with(std::span<const int> peers, std::uint64_t tag,
//                                    std::span<const std::size_t> sizes,
//                                    const ConsumeManyFn& consume, const Deadline& deadline) {
//     recv_all_by_copy(*this, peers, tag, sizes, consume, deadline, staging_);
//   }
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collective/transport/transport.h"

namespace ruccl {

/// Receives the next message of each of `peers` (sizes[i] bytes with `tag` from peers[i]) with
/// transport.recv_all_into into `staging` (resized to the sum of the sizes, rounded up per
/// message to kPieceAlign so each message starts aligned; it keeps its capacity, so a transport
/// that passes its own member reuses it from call to call), then hands them to `consume` in the
/// pieces recv_all_with promises: [offset, offset + n) of every message at once, n <= kPieceBytes
/// and a multiple of kPieceAlign but the last, one empty piece when every message is empty.
/// Between pieces it stops when the group failed (withdrawing this rank's sends, then throwing the
/// failure); a consumer that throws fails the group the same way. Throws what recv_all_into
/// throws.
void recv_all_by_copy(Transport& transport, std::span<const int> peers, std::uint64_t tag,
                      std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                      const Deadline& deadline, std::vector<unsigned char>& staging);

}  // namespace ruccl
