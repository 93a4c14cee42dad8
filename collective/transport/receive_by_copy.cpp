#include "collective/transport/receive_by_copy.h"

#include <algorithm>

namespace ruccl {

void recv_all_by_copy(Transport& transport, std::span<const int> peers, std::uint64_t tag,
                      std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                      const Deadline& deadline, std::vector<unsigned char>& staging) {
  RUCCL_ASSERT(peers.size() == sizes.size());
  // Message i lives at staging[starts[i]]; starts are kPieceAlign aligned (elements never straddle
  // a cache line the consumer then reads twice).
  constexpr std::size_t kInline = 16;
  std::size_t inline_starts[kInline];
  void* inline_dsts[kInline];
  const void* inline_data[kInline];
  std::vector<std::size_t> heap_starts;
  std::vector<void*> heap_dsts;
  std::vector<const void*> heap_data;
  std::size_t* starts = inline_starts;
  void** dsts = inline_dsts;
  const void** data = inline_data;
  if (peers.size() > kInline) {
    heap_starts.resize(peers.size());
    heap_dsts.resize(peers.size());
    heap_data.resize(peers.size());
    starts = heap_starts.data();
    dsts = heap_dsts.data();
    data = heap_data.data();
  }
  std::size_t total = 0;
  std::size_t longest = 0;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    starts[i] = total;
    total += (sizes[i] + kPieceAlign - 1) / kPieceAlign * kPieceAlign;
    longest = std::max(longest, sizes[i]);
  }
  // Allocate before receiving anything: nothing may throw between a receive and its use but the
  // transport itself.
  if (staging.size() < total) staging.resize(total);
  for (std::size_t i = 0; i < peers.size(); ++i) dsts[i] = staging.data() + starts[i];
  transport.recv_all_into(peers, tag, std::span<void* const>(dsts, peers.size()), sizes, deadline);
  std::size_t offset = 0;
  try {
    do {
      const std::size_t n = std::min(kPieceBytes, longest - offset);
      for (std::size_t i = 0; i < peers.size(); ++i) {
        data[i] = staging.data() + starts[i] + std::min(offset, sizes[i]);
      }
      consume(offset, std::span<const void* const>(data, peers.size()), n);
      offset += n;
    } while (offset < longest && !transport.failed());
  } catch (...) {  // the consumer threw: fail the group, so nobody waits for this rank
    transport.fail(current_exception_as_collective_error(
        str(deadline.label(), ": rank ", transport.rank()), transport.rank()));
    transport.withdraw_sends();
    throw;
  }
  if (offset < longest) {  // stopped early: the group failed
    transport.withdraw_sends();
    throw transport.failure();
  }
}

}  // namespace ruccl
