#pragma once
// The collective algorithms. Each is written only against Transport (tagged messages consumed in
// place) and ReduceKernel (type-erased combine), on raw bytes: buffers are contiguous, `count` is
// in elements of kernel.dtype(), byte sizes are explicit for data-movement collectives.
//
// Folds consume received messages in pieces (Transport::recv_with / recv_all_with), so every
// consumer below works on byte range [offset, offset + n) of its messages; pieces are element
// aligned. A message that is only copied is received with recv_into / recv_all_into instead (a
// copying transport lands it in place, with no staging). No algorithm takes wait_send as a sign
// that the peer received anything: it only frees the send buffer (Transport::wait_send). Between an
// isend and its wait_send an algorithm calls only the transport (which withdraws this rank's sends
// before anything it throws) and non-throwing code: what it allocates, it allocates first.
//
// Reduction order (the same for every algorithm but HalvingDoubling, so results are bit-identical
// whatever the algorithm, on every rank, every run): split the `count` elements into W balanced
// chunks (chunk_begin/chunk_size); the elements of chunk c are folded left to right over the ranks
// (c+1) % W, (c+2) % W, ..., c -- the order in which a ring reduce-scatter that leaves chunk c on
// rank c meets them. Mean then divides once by W.
//
// With a fold window (CallOptions::with_fold_window(offset, total)) the chunks are those of the
// window's `total`-element reduction restricted to the buffer (ChunkLayout): uneven, some empty,
// so that every element folds as it would in the whole reduction.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "collective/algorithms/reduce_kernel.h"
#include "collective/protocol/call_options.h"
#include "collective/transport/transport.h"

namespace ruccl {

/// What every algorithm gets: the transport, a tag base unique to the call (an algorithm may use
/// tag .. tag + 0xFFFF) and the call's deadline.
struct AlgorithmContext {
  Transport& transport;
  std::uint64_t tag;
  const Deadline& deadline;
  /// Set when the call's agreement is still in flight (Transport::start_agree): an algorithm that
  /// supports it posts its first sends, then calls agreed() before its first receive, so the data
  /// travels with the record. Null: the call is agreed already.
  const FunctionRef<void()>* pending_agreement = nullptr;
  /// The call's fold window (CallOptions::with_fold_window); total 0: none.
  FoldWindow window{};

  int rank() const { return transport.rank(); }
  int world() const { return transport.world_size(); }
  /// The same call over `other` (a transport that wraps this one, e.g. a device engine's staging).
  AlgorithmContext on(Transport& other) const {
    return AlgorithmContext{other, tag, deadline, pending_agreement, window};
  }
  /// Completes a pending agreement (throws on disagreement, failing the group); else nothing.
  void agreed() const {
    if (pending_agreement != nullptr) (*pending_agreement)();
  }
};

/// Balanced chunks: n elements over w parts; the first n % w parts get one more (257 over 4 ->
/// 65, 64, 64, 64; 5 over 4 -> 2, 1, 1, 1; 2 over 4 -> 1, 1, 0, 0).
inline std::size_t chunk_begin(std::size_t c, std::size_t n, std::size_t w) {
  return c * (n / w) + (c < n % w ? c : n % w);
}
inline std::size_t chunk_size(std::size_t c, std::size_t n, std::size_t w) {
  return n / w + (c < n % w ? 1 : 0);
}

/// The W chunks of a `count`-element reduction: balanced (chunk_begin/chunk_size) or, with a fold
/// window, the chunks of the window's `total`-element reduction intersected with
/// [offset, offset + count) and shifted to the buffer (a 10-element window at offset 6 of 20
/// over 4 ranks: 0, 4, 5, 1; chunk c still holds elements that fold in chunk c's order).
class ChunkLayout {
 public:
  ChunkLayout(std::size_t count, std::size_t world, FoldWindow window = {})
      : count_(count),
        world_(world),
        offset_(window.total > 0 ? static_cast<std::size_t>(window.offset) : 0),
        total_(window.total > 0 ? static_cast<std::size_t>(window.total) : count) {}
  std::size_t count() const { return count_; }
  std::size_t world() const { return world_; }
  /// First element of chunk c in the buffer.
  std::size_t begin(std::size_t c) const {
    const std::size_t at = chunk_begin(c, total_, world_);
    return std::min(count_, at > offset_ ? at - offset_ : 0);
  }
  std::size_t size(std::size_t c) const {
    const std::size_t end = std::min(count_, end_in_window(c));
    return end > begin(c) ? end - begin(c) : 0;
  }
  /// The largest chunk's size.
  std::size_t largest() const {
    std::size_t out = 0;
    for (std::size_t c = 0; c < world_; ++c) out = std::max(out, size(c));
    return out;
  }

 private:
  std::size_t end_in_window(std::size_t c) const {
    const std::size_t end = chunk_begin(c, total_, world_) + chunk_size(c, total_, world_);
    return end > offset_ ? end - offset_ : 0;
  }
  std::size_t count_, world_, offset_, total_;
};

/// Folds chunk `c` of a `count`-element reduction in the canonical order: data[r] points at
/// element 0 of chunk c in rank r's buffer (index = rank); writes chunk_size elements to `out`.
void fold_chunk(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                std::size_t chunk, std::size_t length);
/// Folds all W chunks of whole buffers: data[r] points at element 0 of rank r's buffer.
void fold_all_chunks(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                     std::size_t count);
/// Folds elements [first, first + n) of a `count`-element reduction, each in the order of the
/// chunk it belongs to: data[r] and out point at element `first` (a received piece, see
/// ConsumeManyFn). fold_all_chunks is fold_elements(.., 0, count).
void fold_elements(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                   std::size_t count, std::size_t first, std::size_t n);
/// fold_elements over the chunks of `layout` (a fold window's).
void fold_elements(const ReduceKernel& kernel, void* out, std::span<const void* const> data,
                   const ChunkLayout& layout, std::size_t first, std::size_t n);

// ---- all-reduce: `in` (count elements) on every rank -> `out` (count elements) on every rank --
/// Every rank sends its input to every peer. Small messages (<= fold_all_bytes): every rank folds
/// everything (one exchange). Larger: pairwise reduce-scatter (rank r folds chunk r) then
/// all-gather of the folded chunks. Calls ctx.agreed() after its first sends (they travel with the
/// call's record when the agreement is pending).
void direct_all_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                       const ReduceKernel& kernel, std::size_t fold_all_bytes);
/// Ring reduce-scatter then ring all-gather in balanced chunks, W - 1 steps each, every chunk
/// moved in segments of at most segment_bytes (a multiple of 64), pipelined (ring.cpp).
void ring_all_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                     const ReduceKernel& kernel, std::size_t segment_bytes);
/// Inputs travel up a tree of the given arity to rank 0 (raw, so the fold order stays canonical),
/// rank 0 folds, the result travels down the tree.
void tree_all_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                     const ReduceKernel& kernel, int arity);
/// Rank 0 receives every input, folds, and sends the result to every rank.
void centralized_all_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                            std::size_t count, const ReduceKernel& kernel);
/// Bruck's all-gather of the raw inputs (ceil(log2 W) rounds, any W), then every rank folds all W
/// in the canonical order (recursive_doubling.cpp). The small-message path for many ranks.
void recursive_doubling_all_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                                   std::size_t count, const ReduceKernel& kernel);
/// Rabenseifner: recursive-halving reduce-scatter then recursive-doubling all-gather, any W (the
/// extra ranks fold into a neighbour first). Its fold is a fixed tree over the ranks, NOT the
/// canonical order: bit-identical on every rank and run, not across algorithms
/// (halving_doubling.cpp; only under Determinism::PerAlgorithm).
void halving_doubling_all_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                                 std::size_t count, const ReduceKernel& kernel);

// ---- reduce: like all-reduce, `out` written on root only (may be null elsewhere) -------------
/// Root receives every input and folds (also the centralized reduce).
void direct_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                   const ReduceKernel& kernel, int root);
/// Ring reduce-scatter (segmented like ring_all_reduce), then every rank sends its folded chunk
/// to root.
void ring_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                 const ReduceKernel& kernel, int root, std::size_t segment_bytes);
/// Inputs travel up a tree rooted at root; root folds.
void tree_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                 const ReduceKernel& kernel, int root, int arity);
/// Raw inputs travel up a binomial tree rooted at root (ceil(log2 W) rounds); root folds.
void recursive_doubling_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                               std::size_t count, const ReduceKernel& kernel, int root);
/// The halving reduce-scatter of halving_doubling_all_reduce, then every owner sends its range to
/// root (the same tree fold).
void halving_doubling_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                             std::size_t count, const ReduceKernel& kernel, int root);

// ---- reduce-scatter: in has count = W * m elements; out gets chunk rank (m elements) ---------
/// Rank j sends chunk r of its input to rank r; rank r folds its chunk.
void direct_reduce_scatter(const AlgorithmContext& ctx, const void* in, void* out,
                           std::size_t count, const ReduceKernel& kernel);

// ---- broadcast: root's buf (nbytes) -> every rank's buf ---------------------------------------
/// Root sends to every rank (also the centralized broadcast).
void direct_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes, int root);
/// A chain root -> root+1 -> ... in pipelined segments of segment_bytes (the last one short).
void ring_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes, int root,
                    std::size_t segment_bytes);
/// Down a tree of the given arity rooted at root.
void tree_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes, int root,
                    int arity);
/// Down a binomial tree rooted at root: ceil(log2 W) rounds.
void recursive_doubling_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes,
                                  int root);

// ---- data movement (pairwise messages) --------------------------------------------------------
/// out = the W inputs (block_bytes each) in rank order.
void direct_all_gather(const AlgorithmContext& ctx, const void* in, void* out,
                       std::size_t block_bytes);
/// The same by Bruck's concatenation: ceil(log2 W) rounds for any W (recursive_doubling.cpp).
void recursive_doubling_all_gather(const AlgorithmContext& ctx, const void* in, void* out,
                                   std::size_t block_bytes);
/// Root's out = the W inputs in rank order; out unused elsewhere.
void direct_gather(const AlgorithmContext& ctx, const void* in, void* out, std::size_t block_bytes,
                   int root);
/// out (block_bytes) = block `rank` of root's `in` (W blocks); `in` unused elsewhere.
void direct_scatter(const AlgorithmContext& ctx, const void* in, void* out, std::size_t block_bytes,
                    int root);
/// Block j of `in` goes to rank j; out block j comes from rank j.
void direct_all_to_all(const AlgorithmContext& ctx, const void* in, void* out,
                       std::size_t block_bytes);
/// Exchanges counts: recv_counts[j] = send_counts[rank] of rank j.
void exchange_counts(const AlgorithmContext& ctx, std::span<const std::int64_t> send_counts,
                     std::span<std::int64_t> recv_counts);
/// Uneven all-to-all: send_bytes[j] bytes starting at send_offsets[j] of `in` go to rank j;
/// recv_bytes[j] from rank j land at recv_offsets[j] of `out`.
void direct_all_to_all_v(const AlgorithmContext& ctx, const void* in,
                         std::span<const std::size_t> send_offsets,
                         std::span<const std::size_t> send_bytes, void* out,
                         std::span<const std::size_t> recv_offsets,
                         std::span<const std::size_t> recv_bytes);

}  // namespace ruccl
