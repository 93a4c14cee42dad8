// PeerCollectives: in-process device collectives (peer_collectives.h).
// The reductions; the data movement is in peer_collectives_moves.cpp.
#include "cuda/collective/peer_collectives.h"

#include "collective/algorithms/algorithm.h"
#include "cuda/collective/device_streams.h"
#include "cuda/collective/peer_collectives_internal.h"
#include "cuda/core/check.h"
#include "cuda/core/device_guard.h"

namespace ruccl::cuda {

using namespace peer_detail;

PeerCollectives::PeerCollectives(Transport& transport, Device device)
    : transport_(transport), device_(device) {}

PeerCollectives::~PeerCollectives() {
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
}

void PeerCollectives::ensure_events(std::size_t n) {
  while (events_.size() < n) {
    cudaEvent_t e = nullptr;
    RUCCL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
  }
}

bool PeerCollectives::accessible(const EngineCall& call) {
  if (accessible_) return *accessible_;
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  const int w = transport_.world_size();
  std::vector<std::uint64_t> devices(static_cast<std::size_t>(w));
  const auto mine = static_cast<std::uint64_t>(device_.index);
  all_gather_words(transport_, call, kTagHandles, &mine, devices.data(), 1);
  // This rank's verdict (it can read every peer's memory), then everyone's: all take one path.
  std::uint64_t ok = w <= fold::kMaxFoldSources ? 1 : 0;
  for (std::uint64_t d : devices) {
    const int peer = static_cast<int>(d);
    if (ok == 0 || peer == device_.index) continue;
    int can = 0;
    RUCCL_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, device_.index, peer));
    if (can == 0) {
      ok = 0;
      continue;
    }
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();  // clears the sticky-free "already enabled" status
    } else {
      RUCCL_CUDA_CHECK(status);
    }
  }
  std::vector<std::uint64_t> verdicts(static_cast<std::size_t>(w));
  all_gather_words(transport_, call, kTagMiddle, &ok, verdicts.data(), 1);
  bool all = true;
  for (std::uint64_t v : verdicts) all = all && v == 1;
  accessible_ = all;
  return all;
}

PeerCollectives::Peers PeerCollectives::open(const EngineCall& call, const void* in, void* partial,
                                             void* out, bool wait_all) {
  Peers p;
  p.world = transport_.world_size();
  p.rank = transport_.rank();
  const auto w = static_cast<std::size_t>(p.world);
  ensure_events(2 * w);
  p.stride = 3 + 2 * w;
  RUCCL_CUDA_CHECK(cudaEventRecord(event(kStart), stream_));
  std::vector<std::uint64_t> mine(p.stride);
  mine[0] = reinterpret_cast<std::uint64_t>(in);
  mine[1] = reinterpret_cast<std::uint64_t>(partial);
  mine[2] = reinterpret_cast<std::uint64_t>(out);
  for (std::size_t k = 0; k < 2 * w; ++k) mine[3 + k] = reinterpret_cast<std::uint64_t>(event(k));
  p.words.resize(p.stride * w);
  all_gather_words(transport_, call, kTagHandles, mine.data(), p.words.data(), p.stride);
  if (wait_all) {
    for (int q = 0; q < p.world; ++q) {
      if (q != p.rank) RUCCL_CUDA_CHECK(cudaStreamWaitEvent(stream_, p.event(q, kStart), 0));
    }
  }
  return p;
}

void PeerCollectives::close(const EngineCall& call, const Peers& p) {
  RUCCL_CUDA_CHECK(cudaEventRecord(event(kEnd), stream_));
  const std::uint64_t token = 1;
  std::vector<std::uint64_t> tokens(static_cast<std::size_t>(p.world));
  all_gather_words(transport_, call, kTagEnd, &token, tokens.data(), 1);
  for (int q = 0; q < p.world; ++q) {
    if (q != p.rank) RUCCL_CUDA_CHECK(cudaStreamWaitEvent(stream_, p.event(q, kEnd), 0));
  }
}

void PeerCollectives::ring_all_reduce(const EngineCall& call, const Tensor& in, Tensor& out,
                                      ReduceOperation op) {
  const long long w = transport_.world_size();
  const long long r = transport_.rank();
  const auto n = static_cast<std::size_t>(in.numel());
  const std::size_t es = dtype_size(in.dtype());
  const auto ws = static_cast<std::size_t>(w);
  // Partials of the reduce-scatter: each chunk written once, so no rank overwrites what its right
  // neighbour may still be reading; `out` gets each finished chunk once.
  Tensor partial = Tensor::empty({static_cast<std::int64_t>(n)}, in.dtype(), device_);
  const Peers p = open(call, in.data_ptr(), partial.data_ptr(), out.data_ptr(), false);
  const int left = static_cast<int>(mod(r - 1, w));
  const int right = static_cast<int>(mod(r + 1, w));
  const fold::Elem elem = fold_elem(in.dtype());
  const fold::Op fop = fold_op(op);
  const std::size_t steps = ws - 1;
  // Message j on each link says "event kSteps + j of the sender is recorded": reduce-scatter
  // steps j = 0 .. W-2, then all-gather steps j = W-1 .. 2W-4 (the last all-gather step feeds
  // nobody).
  tokens_.assign(2 * ws, 1);
  auto await_left = [&](std::size_t j) {
    std::uint64_t token = 0;
    transport_.recv_into(left, call.context.tag + kTagRing + j, &token, sizeof token,
                         call.deadline());
    RUCCL_CUDA_CHECK(cudaStreamWaitEvent(stream_, p.event(left, kSteps + j), 0));
  };
  auto announce = [&](std::size_t j) {
    RUCCL_CUDA_CHECK(cudaEventRecord(event(kSteps + j), stream_));
    transport_.isend(right, call.context.tag + kTagRing + j, &tokens_[j], sizeof(std::uint64_t),
                     call.deadline());
  };
  for (std::size_t s = 0; s < steps; ++s) {
    const std::size_t c = mod(r - static_cast<long long>(s) - 2, w);
    if (s == 0) {
      RUCCL_CUDA_CHECK(cudaStreamWaitEvent(stream_, p.event(left, kStart), 0));
    } else {
      await_left(s - 1);
    }
    const std::size_t begin = chunk_begin(c, n, ws) * es;
    fold::FoldArgs args;
    args.sources[0] = (s == 0 ? p.in(left) : p.partial(left)) + begin;
    args.sources[1] = at(in.data_ptr(), begin);
    args.count = 2;
    args.total = args.n = chunk_size(c, n, ws);
    const bool last = s + 1 == steps;
    args.divisor = last ? divisor_of(op, static_cast<int>(w)) : 0;
    fold::launch_fold(elem, fop, at(last ? out.data_ptr() : partial.data_ptr(), begin), args,
                      stream_);
    announce(s);
  }
  for (std::size_t g = 0; g < steps; ++g) {
    const std::size_t c = mod(r - static_cast<long long>(g) - 1, w);
    await_left(steps - 1 + g);
    const std::size_t begin = chunk_begin(c, n, ws) * es;
    copy_async(at(out.data_ptr(), begin), p.out(left) + begin, chunk_size(c, n, ws) * es, stream_);
    if (g + 1 < steps) announce(steps + g);
  }
  transport_.wait_send(right, call.deadline());
  close(call, p);
}

Tensor PeerCollectives::all_reduce(const EngineCall& call, const Tensor& in, ReduceOperation op) {
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  Tensor out = Tensor::empty(in.shape(), in.dtype(), device_);
  const int w = transport_.world_size();
  const auto n = static_cast<std::size_t>(in.numel());
  const std::size_t es = dtype_size(in.dtype());
  if (w == 1) {
    guarded([&] { copy_async(out.data_ptr(), in.data_ptr(), n * es, stream_); });
    return out;  // Mean divides by 1: the values themselves
  }
  if (call.algorithm() == Algorithm::Ring) {
    guarded([&] { ring_all_reduce(call, in, out, op); });
    return out;
  }
  guarded([&] {
    // Every rank folds its own chunk from every input, in the canonical order, then copies the
    // other chunks from their owners.
    const Peers p = open(call, in.data_ptr(), nullptr, out.data_ptr(), true);
    const auto ws = static_cast<std::size_t>(w);
    const auto mine = static_cast<std::size_t>(p.rank);
    fold::FoldArgs args;
    for (int q = 0; q < w; ++q) args.sources[q] = p.in(q);
    args.count = w;
    args.rotate = true;
    args.divisor = divisor_of(op, w);
    args.total = n;
    args.first = chunk_begin(mine, n, ws);
    args.n = chunk_size(mine, n, ws);
    fold::launch_fold(fold_elem(in.dtype()), fold_op(op), at(out.data_ptr(), args.first * es), args,
                      stream_);
    RUCCL_CUDA_CHECK(cudaEventRecord(event(kSteps), stream_));
    const std::uint64_t token = 1;
    std::vector<std::uint64_t> tokens(ws);
    all_gather_words(transport_, call, kTagMiddle, &token, tokens.data(), 1);
    for (int q = 0; q < w; ++q) {
      if (q == p.rank) continue;
      const auto c = static_cast<std::size_t>(q);
      RUCCL_CUDA_CHECK(cudaStreamWaitEvent(stream_, p.event(q, kSteps), 0));
      const std::size_t begin = chunk_begin(c, n, ws) * es;
      copy_async(at(out.data_ptr(), begin), p.out(q) + begin, chunk_size(c, n, ws) * es, stream_);
    }
    close(call, p);
  });
  return out;
}

std::optional<Tensor> PeerCollectives::reduce(const EngineCall& call, const Tensor& in, int root,
                                              ReduceOperation op) {
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  const bool is_root = transport_.rank() == root;
  Tensor out = is_root ? Tensor::empty(in.shape(), in.dtype(), device_) : Tensor();
  guarded([&] {
    const Peers p = open(call, in.data_ptr(), nullptr, is_root ? out.data_ptr() : nullptr, is_root);
    if (is_root) {
      fold::FoldArgs args;
      for (int q = 0; q < p.world; ++q) args.sources[q] = p.in(q);
      args.count = p.world;
      args.rotate = true;
      args.divisor = divisor_of(op, p.world);
      args.total = args.n = static_cast<std::size_t>(in.numel());
      fold::launch_fold(fold_elem(in.dtype()), fold_op(op), out.data_ptr(), args, stream_);
    }
    close(call, p);
  });
  if (!is_root) return std::nullopt;
  return out;
}

Tensor PeerCollectives::reduce_scatter(const EngineCall& call, const Tensor& in,
                                       ReduceOperation op) {
  DeviceGuard guard(device_.index);
  stream_ = collective_stream(device_);  // the current stream of this call
  const int w = transport_.world_size();
  Shape shard = in.shape();
  shard[0] = shard[0] / w;
  Tensor out = Tensor::empty(shard, in.dtype(), device_);
  guarded([&] {
    const Peers p = open(call, in.data_ptr(), nullptr, out.data_ptr(), true);
    const auto n = static_cast<std::size_t>(in.numel());
    const auto ws = static_cast<std::size_t>(w);
    fold::FoldArgs args;
    for (int q = 0; q < w; ++q) args.sources[q] = p.in(q);
    args.count = w;
    args.rotate = true;
    args.divisor = divisor_of(op, w);
    args.total = n;
    args.first = chunk_begin(static_cast<std::size_t>(p.rank), n, ws);  // = rank * n / W
    args.n = n / ws;
    fold::launch_fold(fold_elem(in.dtype()), fold_op(op), out.data_ptr(), args, stream_);
    close(call, p);
  });
  return out;
}

}  // namespace ruccl::cuda
