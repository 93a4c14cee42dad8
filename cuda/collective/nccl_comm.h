#pragma once
// NcclComm: one rank's NCCL communicator, nonblocking (ncclConfig_t::blocking = 0), so no NCCL call
// ever blocks this thread: every wait (initialisation, a call NCCL is still enqueueing, a
// collective running on the stream) polls ncclCommGetAsyncError against a deadline and the
// control channel's failure, like c10d ProcessGroupNCCL's watchdog does, and ends the
// communicator with ncclCommAbort when either fires. Destruction finalises (ncclCommFinalize,
// bounded), then destroys; an aborted communicator is only freed.
#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "collective/transport/transport.h"
#include "tensor/core/device.h"

namespace ruccl::cuda {

class NcclComm {
 public:
  /// Rank `rank` of a `world`-rank communicator on `device`, meeting at `id` (every rank calls
  /// this at once). Returns when NCCL finished initialising; Timeout at `deadline`, the control
  /// channel's failure when it fails first (then the half-made communicator is aborted).
  static std::shared_ptr<NcclComm> init_rank(int world, const ncclUniqueId& id, int rank,
                                             Device device, const Deadline& deadline,
                                             const Transport* control);
  /// One communicator per device of this process (rank i on devices[i]), initialised together in
  /// one NCCL group call.
  static std::vector<std::shared_ptr<NcclComm>> init_all(const std::vector<Device>& devices,
                                                         const Deadline& deadline);

  /// This rank's communicator of the group of `color` (ranked by `key`, then rank) split from
  /// this one by ncclCommSplit: a collective of this communicator, which every rank calls (a
  /// negative color passes NCCL_SPLIT_NOCOLOR and returns nullptr). Waits like init_rank.
  std::shared_ptr<NcclComm> split(int color, int key, const Deadline& deadline,
                                  const Transport* control);

  /// The communicators of one process made together (init_all) finalise together: each one's
  /// destruction starts its ncclCommFinalize, the last one waits for all and destroys them (one
  /// communicator's finalisation may need the others').
  struct Clique;

  NcclComm(ncclComm_t comm, Device device, std::shared_ptr<Clique> clique = nullptr)
      : comm_(comm), device_(device), clique_(std::move(clique)) {}
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  Device device() const { return device_; }
  /// Polls until NCCL's state is no longer ncclInProgress; returns that state (ncclSuccess or the
  /// failure). Timeout / the control channel's failure as init_rank, after aborting.
  ncclResult_t settle(const char* what, const Deadline& deadline, const Transport* control);
  /// ncclCommAbort once (idempotent, thread-safe): pending and later operations end.
  void abort() noexcept;
  bool aborted() const noexcept { return aborted_.load(); }

 private:
  ncclComm_t comm_;
  Device device_;
  std::shared_ptr<Clique> clique_;
  std::mutex abort_mutex_;
  std::atomic<bool> aborted_{false};
};

}  // namespace ruccl::cuda
