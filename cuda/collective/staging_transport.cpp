#include "cuda/collective/staging_transport.h"

#include <chrono>
#include <thread>

#include "cuda/core/check.h"

namespace ruccl::cuda {

void wait_event(cudaEvent_t event, Transport& transport, const Deadline& deadline,
                const char* what) {
  const auto started = Deadline::Clock::now();
  for (;;) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) RUCCL_CUDA_CHECK(status);
    if (transport.failed()) throw transport.failure();
    const auto now = Deadline::Clock::now();
    if (deadline.expired(now)) {
      throw CollectiveError(
          CollectiveErrorKind::Timeout,
          str(deadline.label(), " (call ", deadline.seq(), "): ", what,
              " did not finish within the call's timeout of ", deadline.timeout().count(), " ms"));
    }
    // Spin briefly (a segment copy takes microseconds), then sleep in short steps.
    if (now - started < std::chrono::microseconds(200)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

void StagingTransport::stage(const void* base, std::size_t nbytes, std::size_t segment,
                             std::vector<cudaEvent_t> events) {
  base_ = static_cast<const unsigned char*>(base);
  nbytes_ = nbytes;
  segment_ = segment == 0 ? 1 : segment;
  events_ = std::move(events);
  ready_ = 0;
}

void StagingTransport::unstage() noexcept {
  base_ = nullptr;
  nbytes_ = 0;
  events_.clear();
  ready_ = 0;
}

void StagingTransport::wait_segments(std::size_t first, std::size_t last,
                                     const Deadline& deadline) {
  if (last > events_.size()) last = events_.size();
  if (first < ready_) first = ready_;
  try {
    for (std::size_t k = first; k < last; ++k) {
      wait_event(events_[k], inner_, deadline, "the device-to-host copy of the input");
    }
  } catch (...) {
    inner_.withdraw_sends();  // every throw of a transport call leaves this rank's sends withdrawn
    throw;
  }
  // Segments complete in order (one stream): everything before `last` is ready too.
  if (last > ready_) ready_ = last;
}

void StagingTransport::wait_staged(const Deadline& deadline) {
  wait_segments(0, events_.size(), deadline);
}

SegmentRange covering_segments(std::size_t staged, std::size_t segment, std::ptrdiff_t offset,
                               std::size_t nbytes) {
  if (nbytes == 0 || segment == 0) return {};
  const std::ptrdiff_t end = offset + static_cast<std::ptrdiff_t>(nbytes);
  if (end <= 0 || offset >= static_cast<std::ptrdiff_t>(staged)) return {};
  const std::size_t lo = offset < 0 ? 0 : static_cast<std::size_t>(offset);
  const std::size_t hi = std::min(staged, static_cast<std::size_t>(end));
  return {lo / segment, (hi + segment - 1) / segment};
}

void StagingTransport::isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                             const Deadline& deadline) {
  if (base_ != nullptr) {
    // Pointer difference as integers: `data` need not point into the staged buffer.
    const auto offset = static_cast<std::ptrdiff_t>(reinterpret_cast<std::uintptr_t>(data) -
                                                    reinterpret_cast<std::uintptr_t>(base_));
    const SegmentRange r = covering_segments(nbytes_, segment_, offset, nbytes);
    if (r.last > r.first) wait_segments(r.first, r.last, deadline);
  }
  inner_.isend(peer, tag, data, nbytes, deadline);
}

void StagingTransport::recv_with(int peer, std::uint64_t tag, std::size_t nbytes,
                                 const ConsumeFn& consume, const Deadline& deadline) {
  wait_staged(deadline);
  inner_.recv_with(peer, tag, nbytes, consume, deadline);
}

void StagingTransport::recv_all_with(std::span<const int> peers, std::uint64_t tag,
                                     std::span<const std::size_t> sizes,
                                     const ConsumeManyFn& consume, const Deadline& deadline) {
  wait_staged(deadline);
  inner_.recv_all_with(peers, tag, sizes, consume, deadline);
}

void StagingTransport::recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                                 const Deadline& deadline) {
  wait_staged(deadline);
  inner_.recv_into(peer, tag, dst, nbytes, deadline);
}

void StagingTransport::recv_all_into(std::span<const int> peers, std::uint64_t tag,
                                     std::span<void* const> dsts,
                                     std::span<const std::size_t> sizes, const Deadline& deadline) {
  wait_staged(deadline);
  inner_.recv_all_into(peers, tag, dsts, sizes, deadline);
}

}  // namespace ruccl::cuda
