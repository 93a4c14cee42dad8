#pragma once
// StagingTransport: a Transport that forwards to another and holds back sends of host bytes that
// are still being copied from the device. DeviceEngine stages a device tensor into a pinned host
// buffer in segments (cudaMemcpyAsync device-to-host, one event per segment) and runs our
// algorithms over this transport at once: a send of bytes [a, b) of the staged buffer waits only
// for the segments covering them, so segment k travels on the wire while segment k + 1 is still
// being copied. Receives wait for the whole input first (a fold reads this rank's own input beside
// what arrives). Waits poll the events against the call's deadline and the group's failure.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "collective/transport/transport.h"

namespace ruccl::cuda {

/// The staged segments [first, last) that bytes [offset, offset + nbytes) of a `staged`-byte buffer
/// filled in segments of `segment` bytes fall in ({0, 0} for no bytes or bytes outside it).
struct SegmentRange {
  std::size_t first = 0;
  std::size_t last = 0;
  friend bool operator==(const SegmentRange&, const SegmentRange&) = default;
};
SegmentRange covering_segments(std::size_t staged, std::size_t segment, std::ptrdiff_t offset,
                               std::size_t nbytes);

class StagingTransport final : public Transport {
 public:
  explicit StagingTransport(Transport& inner) : inner_(inner) {}

  /// The bytes [base, base + nbytes) fill in segments of `segment` bytes; events[k] completes
  /// segment k. Until unstage(), sends and receives wait as described above.
  void stage(const void* base, std::size_t nbytes, std::size_t segment,
             std::vector<cudaEvent_t> events);
  void unstage() noexcept;
  /// Waits for every staged segment (deadline, group failure); throws like the transport.
  void wait_staged(const Deadline& deadline);

  int rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  TransportTraits traits() const override { return inner_.traits(); }
  void start_agree(const CallRecord& mine, const Deadline& deadline) override {
    inner_.start_agree(mine, deadline);
  }
  void finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                    const Deadline& deadline) override {
    inner_.finish_agree(mine, all, deadline);
  }
  void isend(int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
             const Deadline& deadline) override;
  void wait_send(int peer, const Deadline& deadline) override { inner_.wait_send(peer, deadline); }
  void recv_with(int peer, std::uint64_t tag, std::size_t nbytes, const ConsumeFn& consume,
                 const Deadline& deadline) override;
  void recv_all_with(std::span<const int> peers, std::uint64_t tag,
                     std::span<const std::size_t> sizes, const ConsumeManyFn& consume,
                     const Deadline& deadline) override;
  void recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                 const Deadline& deadline) override;
  void recv_all_into(std::span<const int> peers, std::uint64_t tag, std::span<void* const> dsts,
                     std::span<const std::size_t> sizes, const Deadline& deadline) override;
  void fail(const CollectiveError& error) noexcept override { inner_.fail(error); }
  void withdraw_sends() noexcept override { inner_.withdraw_sends(); }
  bool failed() const noexcept override { return inner_.failed(); }
  CollectiveError failure() const override { return inner_.failure(); }
  void begin_point_to_point(int peer, bool sending) noexcept override {
    inner_.begin_point_to_point(peer, sending);
  }
  void end_point_to_point() noexcept override { inner_.end_point_to_point(); }
  void observe_waits(bool on) noexcept override { inner_.observe_waits(on); }
  PeerWait longest_wait() const noexcept override { return inner_.longest_wait(); }

 private:
  /// Waits for segments [first, last) (throws Timeout or the group's failure, sends withdrawn).
  void wait_segments(std::size_t first, std::size_t last, const Deadline& deadline);

  Transport& inner_;
  const unsigned char* base_ = nullptr;
  std::size_t nbytes_ = 0;
  std::size_t segment_ = 1;
  std::vector<cudaEvent_t> events_;
  std::size_t ready_ = 0;  // segments [0, ready_) are known complete
};

/// Polls `event` until it completes: Timeout when `deadline` expires first (naming `what`),
/// `transport`'s failure when the group fails first. Throws CudaError for a failed event.
void wait_event(cudaEvent_t event, Transport& transport, const Deadline& deadline,
                const char* what);

}  // namespace ruccl::cuda
