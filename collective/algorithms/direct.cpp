// Direct algorithms: every rank talks to every peer at once (pairwise messages). In process the
// messages are read in place, so these move the fewest bytes; see docs/collectives.md.
#include "collective/algorithms/rank_vector.h"

#include "collective/algorithms/algorithm.h"

namespace ruccl {

namespace {

const unsigned char* at(const void* p, std::size_t offset) {
  return static_cast<const unsigned char*>(p) + offset;
}
unsigned char* at(void* p, std::size_t offset) { return static_cast<unsigned char*>(p) + offset; }

RankVector<int> peers_of(const AlgorithmContext& ctx) {
  RankVector<int> peers;
  for (int p = 0; p < ctx.world(); ++p) {
    if (p != ctx.rank()) peers.push_back(p);
  }
  return peers;
}

// Where each peer's block of `block_bytes` lands in `out` (block index = the peer's rank).
RankVector<void*> blocks_of(const RankVector<int>& peers, void* out, std::size_t block_bytes) {
  RankVector<void*> dsts;
  for (int p : peers) dsts.push_back(at(out, static_cast<std::size_t>(p) * block_bytes));
  return dsts;
}

void wait_all_sends(const AlgorithmContext& ctx, const RankVector<int>& peers) {
  for (int p : peers) ctx.transport.wait_send(p, ctx.deadline);
}

}  // namespace

void direct_all_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                       const ReduceKernel& kernel, std::size_t fold_all_bytes) {
  const int world = ctx.world();
  const int rank = ctx.rank();
  const std::size_t es = kernel.element_size();
  const std::size_t w = static_cast<std::size_t>(world);
  if (world == 1) {
    copy_bytes(out, in, count * es);
    kernel.finish(out, count, 1);
    return;
  }
  const RankVector<int> peers = peers_of(ctx);
  RankVector<const void*> data(w);
  const ChunkLayout layout(count, w, ctx.window);  // the fold order's chunks
  if (count * es <= fold_all_bytes) {
    // One exchange: everybody folds everything.
    const RankVector<std::size_t> sizes(peers.size(), count * es);
    for (int p : peers) ctx.transport.isend(p, ctx.tag, in, count * es, ctx.deadline);
    ctx.agreed();
    ctx.transport.recv_all_with(
        peers, ctx.tag, sizes,
        [&](std::size_t offset, std::span<const void* const> received, std::size_t n) {
          data[static_cast<std::size_t>(rank)] = at(in, offset);
          for (std::size_t i = 0; i < peers.size(); ++i) {
            data[static_cast<std::size_t>(peers[i])] = received[i];
          }
          fold_elements(kernel, at(out, offset), data, layout, offset / es, n / es);
          kernel.finish(at(out, offset), n / es, world);
        },
        ctx.deadline);
    wait_all_sends(ctx, peers);
    return;
  }
  // Pairwise reduce-scatter: balanced chunk p of every input goes to rank p, which folds each of
  // its elements in the order of the layout's chunk that holds it (the same chunk p without a fold
  // window).
  const std::size_t mine = static_cast<std::size_t>(rank);
  const std::size_t my_begin = chunk_begin(mine, count, w) * es;
  const std::size_t my_length = chunk_size(mine, count, w);
  const RankVector<std::size_t> my_sizes(peers.size(), my_length * es);
  RankVector<std::size_t> sizes;  // of the all-gather below
  RankVector<void*> chunk_dsts;
  for (int p : peers) {
    sizes.push_back(chunk_size(static_cast<std::size_t>(p), count, w) * es);
    chunk_dsts.push_back(at(out, chunk_begin(static_cast<std::size_t>(p), count, w) * es));
  }
  for (int p : peers) {
    const auto q = static_cast<std::size_t>(p);
    ctx.transport.isend(p, ctx.tag, at(in, chunk_begin(q, count, w) * es),
                        chunk_size(q, count, w) * es, ctx.deadline);
  }
  ctx.agreed();
  ctx.transport.recv_all_with(
      peers, ctx.tag, my_sizes,
      [&](std::size_t offset, std::span<const void* const> received, std::size_t n) {
        data[mine] = at(in, my_begin + offset);
        for (std::size_t i = 0; i < peers.size(); ++i) {
          data[static_cast<std::size_t>(peers[i])] = received[i];
        }
        fold_elements(kernel, at(out, my_begin + offset), data, layout, (my_begin + offset) / es,
                      n / es);
        kernel.finish(at(out, my_begin + offset), n / es, world);
      },
      ctx.deadline);
  // All-gather of the folded chunks.
  for (int p : peers)
    ctx.transport.isend(p, ctx.tag + 1, at(out, my_begin), my_length * es, ctx.deadline);
  ctx.transport.recv_all_into(peers, ctx.tag + 1, chunk_dsts, sizes, ctx.deadline);
  wait_all_sends(ctx, peers);
}

void direct_reduce(const AlgorithmContext& ctx, const void* in, void* out, std::size_t count,
                   const ReduceKernel& kernel, int root) {
  const int world = ctx.world();
  const std::size_t es = kernel.element_size();
  if (ctx.rank() != root) {
    ctx.transport.isend(root, ctx.tag, in, count * es, ctx.deadline);
    ctx.transport.wait_send(root, ctx.deadline);
    return;
  }
  if (world == 1) {
    copy_bytes(out, in, count * es);
    kernel.finish(out, count, 1);
    return;
  }
  const RankVector<int> peers = peers_of(ctx);
  RankVector<const void*> data(static_cast<std::size_t>(world));
  const RankVector<std::size_t> sizes(peers.size(), count * es);
  ctx.transport.recv_all_with(
      peers, ctx.tag, sizes,
      [&](std::size_t offset, std::span<const void* const> received, std::size_t n) {
        data[static_cast<std::size_t>(root)] = at(in, offset);
        for (std::size_t i = 0; i < peers.size(); ++i) {
          data[static_cast<std::size_t>(peers[i])] = received[i];
        }
        fold_elements(kernel, at(out, offset), data,
                      ChunkLayout(count, static_cast<std::size_t>(world), ctx.window), offset / es,
                      n / es);
        kernel.finish(at(out, offset), n / es, world);
      },
      ctx.deadline);
}

void direct_reduce_scatter(const AlgorithmContext& ctx, const void* in, void* out,
                           std::size_t count, const ReduceKernel& kernel) {
  const int world = ctx.world();
  const std::size_t w = static_cast<std::size_t>(world);
  const std::size_t es = kernel.element_size();
  const std::size_t mine = static_cast<std::size_t>(ctx.rank());
  const std::size_t length = count / w;  // the caller checked divisibility
  if (world == 1) {
    copy_bytes(out, in, count * es);
    kernel.finish(out, count, 1);
    return;
  }
  const RankVector<int> peers = peers_of(ctx);
  RankVector<const void*> data(w);
  const RankVector<std::size_t> sizes(peers.size(), length * es);
  for (int p : peers) {
    ctx.transport.isend(p, ctx.tag, at(in, static_cast<std::size_t>(p) * length * es), length * es,
                        ctx.deadline);
  }
  ctx.transport.recv_all_with(
      peers, ctx.tag, sizes,
      [&](std::size_t offset, std::span<const void* const> received, std::size_t n) {
        data[mine] = at(in, mine * length * es + offset);
        for (std::size_t i = 0; i < peers.size(); ++i) {
          data[static_cast<std::size_t>(peers[i])] = received[i];
        }
        fold_chunk(kernel, at(out, offset), data, mine, n / es);
        kernel.finish(at(out, offset), n / es, world);
      },
      ctx.deadline);
  wait_all_sends(ctx, peers);
}

void direct_broadcast(const AlgorithmContext& ctx, void* buf, std::size_t nbytes, int root) {
  if (ctx.world() == 1) return;
  if (ctx.rank() == root) {
    const RankVector<int> peers = peers_of(ctx);
    for (int p : peers) ctx.transport.isend(p, ctx.tag, buf, nbytes, ctx.deadline);
    wait_all_sends(ctx, peers);
    return;
  }
  ctx.transport.recv_into(root, ctx.tag, buf, nbytes, ctx.deadline);
}

void direct_all_gather(const AlgorithmContext& ctx, const void* in, void* out,
                       std::size_t block_bytes) {
  const RankVector<int> peers = peers_of(ctx);
  const RankVector<std::size_t> sizes(peers.size(), block_bytes);
  const RankVector<void*> dsts = blocks_of(peers, out, block_bytes);  // allocated before isend
  for (int p : peers) ctx.transport.isend(p, ctx.tag, in, block_bytes, ctx.deadline);
  copy_bytes(at(out, static_cast<std::size_t>(ctx.rank()) * block_bytes), in, block_bytes);
  if (peers.empty()) return;
  ctx.transport.recv_all_into(peers, ctx.tag, dsts, sizes, ctx.deadline);
  wait_all_sends(ctx, peers);
}

void direct_gather(const AlgorithmContext& ctx, const void* in, void* out, std::size_t block_bytes,
                   int root) {
  if (ctx.rank() != root) {
    ctx.transport.isend(root, ctx.tag, in, block_bytes, ctx.deadline);
    ctx.transport.wait_send(root, ctx.deadline);
    return;
  }
  copy_bytes(at(out, static_cast<std::size_t>(root) * block_bytes), in, block_bytes);
  const RankVector<int> peers = peers_of(ctx);
  if (peers.empty()) return;
  const RankVector<std::size_t> sizes(peers.size(), block_bytes);
  ctx.transport.recv_all_into(peers, ctx.tag, blocks_of(peers, out, block_bytes), sizes,
                              ctx.deadline);
}

void direct_scatter(const AlgorithmContext& ctx, const void* in, void* out, std::size_t block_bytes,
                    int root) {
  if (ctx.rank() != root) {
    ctx.transport.recv_into(root, ctx.tag, out, block_bytes, ctx.deadline);
    return;
  }
  const RankVector<int> peers = peers_of(ctx);
  for (int p : peers) {
    ctx.transport.isend(p, ctx.tag, at(in, static_cast<std::size_t>(p) * block_bytes), block_bytes,
                        ctx.deadline);
  }
  copy_bytes(out, at(in, static_cast<std::size_t>(root) * block_bytes), block_bytes);
  wait_all_sends(ctx, peers);
}

void direct_all_to_all(const AlgorithmContext& ctx, const void* in, void* out,
                       std::size_t block_bytes) {
  const std::size_t w = static_cast<std::size_t>(ctx.world());
  RankVector<std::size_t> offsets(w);
  for (std::size_t j = 0; j < w; ++j) offsets[j] = j * block_bytes;
  const RankVector<std::size_t> bytes(w, block_bytes);
  direct_all_to_all_v(ctx, in, offsets, bytes, out, offsets, bytes);
}

void exchange_counts(const AlgorithmContext& ctx, std::span<const std::int64_t> send_counts,
                     std::span<std::int64_t> recv_counts) {
  const std::size_t mine = static_cast<std::size_t>(ctx.rank());
  const RankVector<int> peers = peers_of(ctx);
  const RankVector<std::size_t> sizes(peers.size(), sizeof(std::int64_t));
  RankVector<void*> dsts;
  for (int p : peers) dsts.push_back(&recv_counts[static_cast<std::size_t>(p)]);
  for (int p : peers) {
    ctx.transport.isend(p, ctx.tag, &send_counts[static_cast<std::size_t>(p)], sizeof(std::int64_t),
                        ctx.deadline);
  }
  recv_counts[mine] = send_counts[mine];
  if (peers.empty()) return;
  ctx.transport.recv_all_into(peers, ctx.tag, dsts, sizes, ctx.deadline);
  wait_all_sends(ctx, peers);
}

void direct_all_to_all_v(const AlgorithmContext& ctx, const void* in,
                         std::span<const std::size_t> send_offsets,
                         std::span<const std::size_t> send_bytes, void* out,
                         std::span<const std::size_t> recv_offsets,
                         std::span<const std::size_t> recv_bytes) {
  const std::size_t mine = static_cast<std::size_t>(ctx.rank());
  const RankVector<int> peers = peers_of(ctx);
  RankVector<std::size_t> sizes;
  RankVector<void*> dsts;
  for (int p : peers) {
    sizes.push_back(recv_bytes[static_cast<std::size_t>(p)]);
    dsts.push_back(at(out, recv_offsets[static_cast<std::size_t>(p)]));
  }
  for (int p : peers) {
    const auto q = static_cast<std::size_t>(p);
    ctx.transport.isend(p, ctx.tag, at(in, send_offsets[q]), send_bytes[q], ctx.deadline);
  }
  copy_bytes(at(out, recv_offsets[mine]), at(in, send_offsets[mine]), send_bytes[mine]);
  if (peers.empty()) return;
  ctx.transport.recv_all_into(peers, ctx.tag, dsts, sizes, ctx.deadline);
  wait_all_sends(ctx, peers);
}

}  // namespace ruccl
