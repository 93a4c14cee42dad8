// Fold windows on the MPI engine: a buffer cut into pieces, each all_reduced (or reduced) with its
// fold window, gives the whole buffer's canonical bits through every path (fused, pairwise, the
// fallback beyond the pairwise world size, MPI_Ireduce's stand-in), as it does on our algorithms:
// what makes DataParallel's buckets exact over MPI at any number of processes.
#include <cstdint>
#include <cstring>
#include <vector>

#include "collective/run_ranks.h"
#include "tensor/ops/shape_ops.h"
#include "tensor/tensor.h"
#include "tests/mpi/mpi_job_support.h"

using namespace ruccl;
using namespace ruccl::testing::mpi_job;
using namespace std::chrono_literals;

namespace {

Communicator group(std::size_t fused_bytes, std::size_t pairwise_bytes) {
  CommunicatorOptions options;
  options.timeout = 20s;
  MpiTransportOptions transport;
  transport.fused_all_reduce_bytes = fused_bytes;
  transport.pairwise_all_reduce_bytes = pairwise_bytes;
  return MpiGroup::world(Device::cpu(), options, transport);
}

/// Rank r's input: values with many significant bits, so the order of a sum shows.
Tensor noisy_input(int rank, std::int64_t n) {
  Generator gen(4242 + static_cast<std::uint64_t>(rank));
  return Tensor::randn({n}, gen, DType::F32) * 1000.0;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

/// The whole buffer's canonical bits: W threads of this process (our algorithms).
Tensor whole(int world, int rank, std::int64_t n) {
  std::vector<Tensor> out(static_cast<std::size_t>(world));
  run_ranks(InProcessGroup::create(world), [&](Communicator& c) {
    out[static_cast<std::size_t>(c.rank())] = c.all_reduce(noisy_input(c.rank(), n));
  });
  return out[static_cast<std::size_t>(rank)];
}

/// The pieces [0, 5), [5, 5 + 1000), [1005, n): each reduced with its window, then joined.
template <typename Reduce>
Tensor by_pieces(const Tensor& x, Reduce reduce) {
  const std::int64_t n = x.numel();
  const std::int64_t cuts[] = {0, 5, 1005, n};
  std::vector<Tensor> parts;
  for (int i = 0; i < 3; ++i) {
    const Tensor piece = x.narrow(0, cuts[i], cuts[i + 1] - cuts[i]).contiguous();
    parts.push_back(reduce(piece, CallOptions().with_fold_window(cuts[i], n)));
  }
  return ruccl::cat(parts, 0);
}

}  // namespace

TEST_CASE("MPI all_reduces of a buffer's pieces with fold windows give the whole buffer's bits",
          "[mpi]") {
  constexpr std::int64_t kN = 3001;
  const int r = job_rank();
  const int w = job_size();
  const Tensor x = noisy_input(r, kN);
  const Tensor want = whole(w, r, kN);
  struct Path {
    const char* name;
    std::size_t fused_bytes, pairwise_bytes;
    bool ours_without_window;  // whether the call without a window folds in our order too
  };
  // fused: every piece fits; pairwise: none is fused; "MPI's own": MPI_Iallreduce asked for at
  // every size (pairwise_all_reduce_bytes SIZE_MAX), which a fold window overrides.
  const Path paths[] = {{"fused", 1 << 20, 0, true},
                        {"pairwise", 0, 0, true},
                        {"MPI's own asked for", 0, SIZE_MAX, false}};
  for (const Path& p : paths) {
    INFO(p.name);
    Communicator comm = group(p.fused_bytes, p.pairwise_bytes);
    const Tensor got = by_pieces(x, [&](const Tensor& piece, const CallOptions& call) {
      return comm.all_reduce(piece, ReduceOperation::Sum, call);
    });
    REQUIRE(same_bits(got, want));
    // Without windows the pieces fold in their own chunks: not the whole buffer's order (the
    // check that this test can fail; at 2 processes every order gives the same bits).
    if (w > 2 && p.ours_without_window) {
      const Tensor plain = by_pieces(x, [&](const Tensor& piece, const CallOptions&) {
        return comm.all_reduce(piece, ReduceOperation::Sum);
      });
      REQUIRE_FALSE(same_bits(plain, want));
    }
  }
  SECTION("reduce with a window takes our order too") {
    Communicator comm = group(0, SIZE_MAX);
    const Tensor got = by_pieces(x, [&](const Tensor& piece, const CallOptions& call) {
      std::optional<Tensor> out = comm.reduce(piece, 0, ReduceOperation::Sum, call);
      return out ? *out : Tensor::zeros(piece.shape());
    });
    if (r == 0) REQUIRE(same_bits(got, want));
  }
}
