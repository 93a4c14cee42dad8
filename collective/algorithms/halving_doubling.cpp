// Rabenseifner's all-reduce (Algorithm::HalvingDoubling): a recursive-halving reduce-scatter then
// a recursive-doubling all-gather, 2 log2(P) steps moving 2 (P - 1) / P * S bytes per rank, where
// P is the largest power of two <= W. Bandwidth-optimal like the ring, in log2 instead of W - 1
// steps.
//
// Other W (the standard fold-in, as MPICH does): the first 2 * rem ranks (rem = W - P) pair up;
// even rank 2i sends its whole input to 2i + 1, which folds x[2i] (+) x[2i + 1] and takes part as
// virtual rank i; the others are virtual ranks r - rem. At the end 2i + 1 sends the result to 2i.
//
// Reduce-scatter, distance d = 1, 2, ..., P / 2: virtual rank v and its partner v ^ d hold the
// same element range; the one with bit d clear keeps the lower half (split at the middle, floor),
// the other the upper, each sends the half it gives up and folds the partner's into the half it
// keeps. All-gather: the same pairs in reverse order exchange the ranges they own.
//
// The fold is a tree, not the canonical linear fold: every element is reduced as the pairwise
// (cascade) sum of the ranks in rank order -- the leading pairs (x0 (+) x1), (x2 (+) x3), ... of
// the fold-in first, then partials of adjacent blocks of virtual ranks, always with the lower
// ranks' partial on the left. That tree depends only on W, never on the element's position, the
// count, the split or a fold window, so results are bit-identical on every rank and every run (the
// owner of a range computes it and the all-gather copies it) and pieces of a buffer give the whole
// buffer's bits; but they may differ in the last bits from the linear-fold algorithms. Hence it
// runs only under Determinism::PerAlgorithm (docs/collectives.md, "Determinism modes").
#include <algorithm>
#include <vector>

#include "collective/algorithms/algorithm.h"
#include "collective/algorithms/rank_vector.h"

namespace ruccl {

namespace {

unsigned char* at(void* p, std::size_t offset) { return static_cast<unsigned char*>(p) + offset; }
const unsigned char* at(const void* p, std::size_t offset) {
  return static_cast<const unsigned char*>(p) + offset;
}

struct Range {
  std::size_t lo = 0, hi = 0;
  std::size_t size() const { return hi - lo; }
};

// The power-of-two core of W ranks and the fold-in of the others.
struct Butterfly {
  int world;
  int pof2 = 1;
  int rem = 0;
  explicit Butterfly(int w) : world(w) {
    while (pof2 * 2 <= w) pof2 *= 2;
    rem = w - pof2;
  }
  // Rank r's virtual rank, or -1 for an even rank of the fold-in (it sits out the butterfly).
  int virt(int r) const {
    if (r < 2 * rem) return r % 2 == 1 ? r / 2 : -1;
    return r - rem;
  }
  int real(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
  // The ranges virtual rank v keeps at each step of the reduce-scatter: ranges[0] = everything,
  // ranges[k + 1] = what it keeps after the step of distance 2^k; the last is the range it owns.
  std::vector<Range> ranges(int v, std::size_t count) const {
    std::vector<Range> out{{0, count}};
    for (int d = 1; d < pof2; d <<= 1) {
      const Range cur = out.back();
      const std::size_t mid = cur.lo + cur.size() / 2;
      out.push_back((v & d) == 0 ? Range{cur.lo, mid} : Range{mid, cur.hi});
    }
    return out;
  }
};

// Runs the fold-in and the reduce-scatter into `work` (count elements): on return a virtual rank
// owns its range complete (Mean applied), and the returned ranges are its steps'. A rank that
// sits out returns no ranges (its input went to its odd neighbour). Tags: ctx.tag .. + 0x3F.
std::vector<Range> halving_reduce_scatter(const AlgorithmContext& ctx, const Butterfly& b,
                                          const void* in, void* work, std::size_t count,
                                          const ReduceKernel& kernel) {
  const int r = ctx.rank();
  const std::size_t es = kernel.element_size();
  const int v = b.virt(r);
  if (v < 0) {
    if (count > 0) ctx.transport.isend(r + 1, ctx.tag, in, count * es, ctx.deadline);
    ctx.transport.wait_send(r + 1, ctx.deadline);
    return {};
  }
  if (r < 2 * b.rem) {  // odd rank of the fold-in: work = x[r - 1] (+) x[r]
    if (count > 0) {
      ctx.transport.recv_with(
          r - 1, ctx.tag, count * es,
          [&](std::size_t offset, const void* data, std::size_t n) {
            kernel.combine(at(work, offset), data, at(in, offset), n / es);
          },
          ctx.deadline);
    }
  } else {
    copy_bytes(work, in, count * es);
  }
  const std::vector<Range> ranges = b.ranges(v, count);
  std::uint64_t step = 1;
  for (int d = 1; d < b.pof2; d <<= 1, ++step) {
    const Range& cur = ranges[step - 1];
    const Range& keep = ranges[step];
    const Range give = keep.lo == cur.lo ? Range{keep.hi, cur.hi} : Range{cur.lo, keep.lo};
    const int partner = b.real(v ^ d);
    const bool partner_lower = (v ^ d) < v;  // its partial covers the lower ranks: on the left
    if (give.size() > 0) {
      ctx.transport.isend(partner, ctx.tag + step, at(work, give.lo * es), give.size() * es,
                          ctx.deadline);
    }
    if (keep.size() > 0) {
      ctx.transport.recv_with(
          partner, ctx.tag + step, keep.size() * es,
          [&](std::size_t offset, const void* data, std::size_t n) {
            void* acc = at(work, keep.lo * es + offset);
            if (partner_lower) {
              kernel.combine(acc, data, acc, n / es);
            } else {
              kernel.combine(acc, acc, data, n / es);
            }
          },
          ctx.deadline);
    }
    // The half given up is written again only by the all-gather, from this same partner.
    ctx.transport.wait_send(partner, ctx.deadline);
  }
  const Range& mine = ranges.back();
  kernel.finish(at(work, mine.lo * es), mine.size(), ctx.world());
  return ranges;
}

}  // namespace

void halving_doubling_all_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                                 std::size_t count, const ReduceKernel& kernel) {
  const Butterfly b(ctx.world());
  const int r = ctx.rank();
  const std::size_t es = kernel.element_size();
  const std::uint64_t tag_gather = ctx.tag + 0x40;
  const std::uint64_t tag_fold_out = ctx.tag + 0x80;
  const std::vector<Range> ranges = halving_reduce_scatter(ctx, b, in, out, count, kernel);
  if (ranges.empty()) {  // sat out: the odd neighbour sends the result
    if (count > 0) ctx.transport.recv_into(r + 1, tag_fold_out, out, count * es, ctx.deadline);
    return;
  }
  const int v = b.virt(r);
  std::uint64_t step = ranges.size() - 1;
  for (int d = b.pof2 >> 1; d >= 1; d >>= 1, --step) {
    const Range& mine = ranges[step];
    const Range& parent = ranges[step - 1];
    const Range theirs =
        mine.lo == parent.lo ? Range{mine.hi, parent.hi} : Range{parent.lo, mine.lo};
    const int partner = b.real(v ^ d);
    if (mine.size() > 0) {
      ctx.transport.isend(partner, tag_gather + step, at(out, mine.lo * es), mine.size() * es,
                          ctx.deadline);
    }
    if (theirs.size() > 0) {
      ctx.transport.recv_into(partner, tag_gather + step, at(out, theirs.lo * es),
                              theirs.size() * es, ctx.deadline);
    }
    ctx.transport.wait_send(partner, ctx.deadline);  // the next step sends a range holding it
  }
  if (r < 2 * b.rem) {
    if (count > 0) ctx.transport.isend(r - 1, tag_fold_out, out, count * es, ctx.deadline);
    ctx.transport.wait_send(r - 1, ctx.deadline);
  }
}

void halving_doubling_reduce(const AlgorithmContext& ctx, const void* in, void* out,
                             std::size_t count, const ReduceKernel& kernel, int root) {
  const Butterfly b(ctx.world());
  const int r = ctx.rank();
  const std::size_t es = kernel.element_size();
  const std::uint64_t tag_gather = ctx.tag + 0x40;
  // Root folds into `out`; the others need a scratch for the partials.
  std::vector<unsigned char> scratch;
  void* work = out;
  if (r != root) {
    scratch.resize(std::max<std::size_t>(1, count * es));
    work = scratch.data();
  }
  const std::vector<Range> ranges = halving_reduce_scatter(ctx, b, in, work, count, kernel);
  if (r != root) {
    if (!ranges.empty() && ranges.back().size() > 0) {
      ctx.transport.isend(root, tag_gather, at(work, ranges.back().lo * es),
                          ranges.back().size() * es, ctx.deadline);
      ctx.transport.wait_send(root, ctx.deadline);
    }
    return;
  }
  RankVector<int> owners;
  RankVector<void*> dsts;
  RankVector<std::size_t> sizes;
  for (int v = 0; v < b.pof2; ++v) {
    const int owner = b.real(v);
    const Range owned = b.ranges(v, count).back();
    if (owner == root || owned.size() == 0) continue;
    owners.push_back(owner);
    dsts.push_back(at(out, owned.lo * es));
    sizes.push_back(owned.size() * es);
  }
  if (!owners.empty()) ctx.transport.recv_all_into(owners, tag_gather, dsts, sizes, ctx.deadline);
}

}  // namespace ruccl
