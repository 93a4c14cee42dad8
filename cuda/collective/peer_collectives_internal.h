#pragma once
// The pieces PeerCollectives' two sources share (peer_collectives.cpp: the reductions;
// peer_collectives_moves.cpp: the data movement): a call's handles, sub-tags, event slots.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "collective/algorithms/algorithm.h"
#include "cuda/collective/peer_collectives.h"
#include "cuda/core/check.h"

namespace ruccl::cuda {

namespace peer_detail {

// Events of one rank's handle: start, end, then the ring's steps.
constexpr std::size_t kStart = 0;
constexpr std::size_t kEnd = 1;
constexpr std::size_t kSteps = 2;
// Sub-tags of a call (an engine may use call.context.tag .. + 0xFFFF).
constexpr std::uint64_t kTagHandles = 0;
constexpr std::uint64_t kTagMiddle = 0x200;
constexpr std::uint64_t kTagRing = 0x400;
constexpr std::uint64_t kTagEnd = 0x8000;

inline std::size_t mod(long long a, long long w) {
  return static_cast<std::size_t>(((a % w) + w) % w);
}

inline unsigned char* at(void* p, std::size_t offset) {
  return static_cast<unsigned char*>(p) + offset;
}
inline const unsigned char* at(const void* p, std::size_t offset) {
  return static_cast<const unsigned char*>(p) + offset;
}

inline void copy_async(void* dst, const void* src, std::size_t nbytes, cudaStream_t stream) {
  if (nbytes != 0) RUCCL_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDefault, stream));
}

inline void all_gather_words(Transport& transport, const EngineCall& call, std::uint64_t sub,
                             const std::uint64_t* mine, std::uint64_t* all, std::size_t words) {
  direct_all_gather(AlgorithmContext{transport, call.context.tag + sub, call.deadline()}, mine, all,
                    words * sizeof(std::uint64_t));
}

inline int divisor_of(ReduceOperation op, int world) {
  return op == ReduceOperation::Mean ? world : 0;
}

}  // namespace peer_detail

struct PeerCollectives::Peers {
  int world = 0;
  int rank = 0;
  std::size_t stride = 0;  // words per rank: in, partial, out, then 2 W events
  std::vector<std::uint64_t> words;

  std::uint64_t word(int r, std::size_t k) const {
    return words[static_cast<std::size_t>(r) * stride + k];
  }
  const unsigned char* in(int r) const {
    return reinterpret_cast<const unsigned char*>(word(r, 0));
  }
  const unsigned char* partial(int r) const {
    return reinterpret_cast<const unsigned char*>(word(r, 1));
  }
  const unsigned char* out(int r) const {
    return reinterpret_cast<const unsigned char*>(word(r, 2));
  }
  cudaEvent_t event(int r, std::size_t k) const {
    return reinterpret_cast<cudaEvent_t>(word(r, 3 + k));
  }
};

template <typename Body>
auto PeerCollectives::guarded(Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (...) {
    // Work this rank enqueued may still read a peer's buffer or write one this unwinding frees:
    // let it finish (it waits only on events already recorded, so this ends).
    (void)cudaStreamSynchronize(stream_);
    throw;
  }
}

}  // namespace ruccl::cuda
