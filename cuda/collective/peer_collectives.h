#pragma once
// PeerCollectives: the collectives of ranks that are threads of one process on CUDA devices (an
// in-process group: the all_reduce demo's four logical ranks on GPU 0). Every rank reads its
// peers' device buffers directly: device-to-device copies (cudaMemcpyAsync, peer copies between
// GPUs) and the fold kernels (fold_kernels.cuh), with no host round trip of the data.
//
// The host only orders the work. A call all-gathers every rank's handle over the group's transport
// (a few hundred host bytes: its buffer addresses and the CUDA events it records), and every
// cross-rank dependency is a cudaStreamWaitEvent on the producer's event, taken only after the
// producer said (in a message) that it recorded it. So each rank's stream waits for exactly what
// it reads, the host threads run ahead, and nothing synchronises with the device. At the end
// every rank's stream waits for every peer's last event: a buffer a peer may still read (the
// caller's input, the result) is never reused before the peer is done with it.
//
// Reduction order: the canonical one (collective/algorithms/algorithm.h), so results are
// bit-identical to the CPU path. Ring all-reduce is the ring itself: in step s rank r folds the
// partial of chunk (r - s - 2) that its left neighbour made (read in place) with its own input,
// exactly as ring.cpp combines; the all-gather copies each finished chunk from the left. The other
// all-reduce algorithms, reduce and reduce_scatter fold each chunk once from every rank's input in
// the canonical order (one kernel).
//
// Used when every rank of the group is on a CUDA device and the devices can read each other's
// memory (the same device, or peer access between every pair: accessible()), for groups of up to
// fold::kMaxFoldSources ranks; DeviceEngine stages on the host otherwise.
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "collective/engine/collective_engine.h"

namespace ruccl::cuda {

class PeerCollectives {
 public:
  PeerCollectives(Transport& transport, Device device);
  ~PeerCollectives();
  PeerCollectives(const PeerCollectives&) = delete;
  PeerCollectives& operator=(const PeerCollectives&) = delete;

  /// `in` is contiguous, in its accumulation dtype, on this rank's device.
  Tensor all_reduce(const EngineCall& call, const Tensor& in, ReduceOperation op);
  std::optional<Tensor> reduce(const EngineCall& call, const Tensor& in, int root,
                               ReduceOperation op);
  Tensor reduce_scatter(const EngineCall& call, const Tensor& in, ReduceOperation op);
  /// `in`: root's contiguous tensor on root, undefined elsewhere.
  Tensor broadcast(const EngineCall& call, const Tensor& in, int root);
  Tensor all_gather(const EngineCall& call, const Tensor& in);
  std::optional<Tensor> gather(const EngineCall& call, const Tensor& in, int root);
  /// `in`: root's contiguous tensor on root, undefined elsewhere.
  Tensor scatter(const EngineCall& call, const Tensor& in, int root);
  Tensor all_to_all(const EngineCall& call, const Tensor& in);

  /// Whether every rank of the group can read every other rank's device memory (all on one
  /// device, or peer access between every pair, which this enables). Asked once, in the group's
  /// first call on every rank (an all-gather of the device indices), then remembered: every rank
  /// gets the same answer, so all take the same path.
  bool accessible(const EngineCall& call);

 private:
  struct Peers;
  /// Records this rank's start event, all-gathers the handles and (with `wait_all`) makes this
  /// rank's stream wait for every peer's start event (its input is ready).
  Peers open(const EngineCall& call, const void* in, void* partial, void* out, bool wait_all);
  /// Records the end event, exchanges end tokens and waits for every peer's end event.
  void close(const EngineCall& call, const Peers& peers);
  /// Runs `body`; on any exception synchronises this rank's stream first (work already enqueued
  /// may read buffers the unwinding frees), then rethrows.
  template <typename Body>
  auto guarded(Body&& body) -> decltype(body());
  void ring_all_reduce(const EngineCall& call, const Tensor& in, Tensor& out, ReduceOperation op);
  void ensure_events(std::size_t n);
  cudaEvent_t event(std::size_t k) const { return events_[k]; }

  Transport& transport_;
  Device device_;
  cudaStream_t stream_ = nullptr;    // the calling thread's current stream, read by every call
  std::vector<cudaEvent_t> events_;  // 0: start, 1: end, 2..: ring steps
  std::vector<std::uint64_t> tokens_;
  std::optional<bool> accessible_;
};

}  // namespace ruccl::cuda
