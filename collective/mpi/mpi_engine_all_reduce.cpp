// MpiEngine's own all_reduce paths (mpi_engine.h): the fused one (one exchange: records with the
// data behind them) and the pairwise reduce-scatter + all-gather on MPI messages. Both fold in
// the canonical order (collective/algorithms/algorithm.h), in the chunks of the call's fold
// window when it has one (ChunkLayout).
#include <array>

#include "collective/algorithms/algorithm.h"
#include "collective/algorithms/rank_vector.h"
#include "collective/algorithms/reduce_kernel.h"
#include "collective/mpi/mpi_engine.h"
#include "collective/mpi/mpi_runtime.h"

namespace ruccl {

namespace {

/// The tags of pairwise_all_reduce's messages on the collective communicator (MPI's own
/// collectives there use tags of their own, which never match these).
constexpr int kPairwiseTag = 7;

Tensor to_device(const Tensor& host, Device device) {
  return device.is_cpu() ? host : host.to(device);
}

}  // namespace

bool MpiEngine::fused(const EngineCall& call) const {
  const std::size_t limit = transport_.options().fused_all_reduce_bytes;
  if (!call.agreement_pending() || limit == 0) return false;
  const DType acc = accumulation_dtype(static_cast<DType>(call.record.dtype));
  return static_cast<std::size_t>(call.record.shape().numel()) * dtype_size(acc) <=
         std::min<std::size_t>(limit, kMaxFusedBytes);
}

Tensor MpiEngine::fused_all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  const Tensor host = host_contiguous(t);
  const DType acc = accumulation_dtype(t.dtype());
  const Tensor in = acc == host.dtype() ? host : host.to(acc).contiguous();
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  const ReduceKernel kernel(in.dtype(), op);
  const auto count = static_cast<std::size_t>(in.numel());
  const int world = transport_.world_size();
  RankVector<const void*> data(static_cast<std::size_t>(world));
  transport_.send_record_with(in.data_ptr(), in.nbytes());  // copied: returns at once
  call.agreed();  // every rank's record and data; throws on disagreement (on every rank)
  transport_.expect_payloads(in.nbytes());
  for (int p = 0; p < world; ++p) {
    data[static_cast<std::size_t>(p)] =
        p == transport_.rank() ? in.data_ptr() : transport_.agreed_payload(p).data();
  }
  // The canonical order (collective/algorithms/algorithm.h), as our Direct all_reduce folds: the
  // same bits on every rank, and as the fallback's (the fold window's chunks, if any).
  const ChunkLayout layout(count, static_cast<std::size_t>(world), call.context.window);
  fold_elements(kernel, out.data_ptr(), data, layout, 0, count);
  kernel.finish(out.data_ptr(), count, world);
  Tensor result = out.dtype() == t.dtype() ? out : out.to(t.dtype());
  return to_device(result, device_);
}

Tensor MpiEngine::pairwise_all_reduce(const EngineCall& call, const Tensor& t, ReduceOperation op) {
  agreed(call);
  const Tensor in = host_contiguous(t);
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  const ReduceKernel kernel(in.dtype(), op);
  const std::size_t es = kernel.element_size();
  const auto count = static_cast<std::size_t>(in.numel());
  const int world = transport_.world_size();
  const auto w = static_cast<std::size_t>(world);
  const auto mine = static_cast<std::size_t>(transport_.rank());
  const ChunkLayout layout(count, w, call.context.window);  // balanced without a fold window
  const std::size_t length = layout.size(mine);
  const std::size_t slot = length * es;
  // The peers' chunks land in a tensor, not a std::vector: a large tensor's block is page-aligned
  // (and reused), like the input and the result. The kernel's copy between processes (OpenMPI's
  // single-copy CMA) is slow between buffers whose offsets differ by an odd part of a cache line:
  // a vector's block (malloc: 16 bytes into a page) made the 1 MiB all_reduce 2.5x slower.
  const Tensor staging = Tensor::empty({static_cast<std::int64_t>(length * (w - 1))}, in.dtype());
  const auto* src = static_cast<const std::uint8_t*>(in.data_ptr());
  auto* dst = static_cast<std::uint8_t*>(out.data_ptr());
  auto* staged = static_cast<std::uint8_t*>(staging.data_ptr());
  // What a failed call leaves to MPI: its receives may still write into these.
  const auto keep =
      std::make_shared<std::array<Tensor, 3>>(std::array<Tensor, 3>{in, out, staging});
  const MPI_Comm comm = transport_.collective_comm();
  auto peer_slot = [&](std::size_t p) { return p < mine ? p : p - 1; };
  auto post = [&](int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    for (MPI_Request& r : requests_) mpi::orphan_request(r, keep);
    const CollectiveError e(
        CollectiveErrorKind::PeerLost,
        str(what, " of the pairwise all_reduce failed: ", mpi::error_string(code)));
    transport_.fail(e);
    throw e;
  };
  // Reduce-scatter: chunk p of this rank's input goes to rank p; chunk `mine` of every peer's
  // input lands in staging, then is folded in the canonical order. Chunks of a fold window may be
  // uneven or empty (an empty message is still sent: it keeps the exchange's shape simple).
  requests_.assign(2 * (w - 1), MPI_REQUEST_NULL);
  std::size_t k = 0;
  for (std::size_t p = 0; p < w; ++p) {
    if (p == mine) continue;
    post(MPI_Irecv(staged + peer_slot(p) * slot, static_cast<int>(slot), MPI_BYTE,
                   static_cast<int>(p), kPairwiseTag, comm, &requests_[k++]),
         "MPI_Irecv");
  }
  for (std::size_t p = 0; p < w; ++p) {
    if (p == mine) continue;
    post(MPI_Isend(src + layout.begin(p) * es, static_cast<int>(layout.size(p) * es), MPI_BYTE,
                   static_cast<int>(p), kPairwiseTag, comm, &requests_[k++]),
         "MPI_Isend");
  }
  transport_.wait(std::span<MPI_Request>(requests_), keep, call.deadline(),
                  "the pairwise all_reduce's reduce-scatter");
  RankVector<const void*> data(w);
  for (std::size_t p = 0; p < w; ++p) {
    data[p] = p == mine ? static_cast<const void*>(src + layout.begin(mine) * es)
                        : staged + peer_slot(p) * slot;
  }
  std::uint8_t* folded = dst + layout.begin(mine) * es;
  fold_chunk(kernel, folded, data, mine, length);
  kernel.finish(folded, length, world);
  // All-gather: the folded chunk to every peer, theirs straight into the result.
  requests_.assign(2 * (w - 1), MPI_REQUEST_NULL);
  k = 0;
  for (std::size_t p = 0; p < w; ++p) {
    if (p == mine) continue;
    post(MPI_Irecv(dst + layout.begin(p) * es, static_cast<int>(layout.size(p) * es), MPI_BYTE,
                   static_cast<int>(p), kPairwiseTag + 1, comm, &requests_[k++]),
         "MPI_Irecv");
  }
  for (std::size_t p = 0; p < w; ++p) {
    if (p == mine) continue;
    post(MPI_Isend(folded, static_cast<int>(slot), MPI_BYTE, static_cast<int>(p), kPairwiseTag + 1,
                   comm, &requests_[k++]),
         "MPI_Isend");
  }
  transport_.wait(std::span<MPI_Request>(requests_), keep, call.deadline(),
                  "the pairwise all_reduce's all-gather");
  return to_device(out, device_);
}

}  // namespace ruccl
