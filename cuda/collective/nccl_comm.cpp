#include "cuda/collective/nccl_comm.h"

#include <chrono>
#include <thread>

#include "cuda/collective/device_streams.h"
#include "cuda/collective/nccl_support.h"
#include "cuda/core/check.h"
#include "cuda/core/device.h"
#include "cuda/core/device_guard.h"

namespace ruccl::cuda {

struct NcclComm::Clique {
  std::mutex mutex;
  std::size_t remaining = 0;
  std::vector<std::pair<ncclComm_t, int>> finalizing;  // communicator, device
};

namespace {

ncclConfig_t nonblocking_config() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

void pause(Deadline::Clock::time_point started) {
  if (Deadline::Clock::now() - started < std::chrono::microseconds(200)) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

ncclResult_t NcclComm::settle(const char* what, const Deadline& deadline,
                              const Transport* control) {
  const auto started = Deadline::Clock::now();
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t got = ncclCommGetAsyncError(comm_, &state);
    if (got != ncclSuccess) return got;
    if (state != ncclInProgress) return state;
    if (control != nullptr && control->failed()) {
      abort();
      throw control->failure();
    }
    if (deadline.expired()) {
      abort();
      throw CollectiveError(
          CollectiveErrorKind::Timeout,
          str(deadline.label(), " (call ", deadline.seq(), "): ", what, " did not finish within ",
              deadline.timeout().count(), " ms; the NCCL communicator was aborted"));
    }
    pause(started);
  }
}

std::shared_ptr<NcclComm> NcclComm::init_rank(int world, const ncclUniqueId& id, int rank,
                                              Device device, const Deadline& deadline,
                                              const Transport* control) {
  require_device("NcclComm::init_rank", device.index);
  DeviceGuard guard(device.index);
  ncclConfig_t config = nonblocking_config();
  ncclComm_t raw = nullptr;
  const ncclResult_t started = ncclCommInitRankConfig(&raw, world, id, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    if (raw != nullptr) (void)ncclCommAbort(raw);
    throw nccl_collective_error(
        started,
        str("ncclCommInitRankConfig (rank ", rank, " of ", world, " on ", device.to_string(), ")"),
        ncclGetLastError(nullptr));
  }
  auto comm = std::make_shared<NcclComm>(raw, device);
  const ncclResult_t state = comm->settle("NCCL communicator initialisation", deadline, control);
  if (state != ncclSuccess) {
    comm->abort();
    throw nccl_collective_error(state, "NCCL communicator initialisation", ncclGetLastError(raw));
  }
  return comm;
}

std::shared_ptr<NcclComm> NcclComm::split(int color, int key, const Deadline& deadline,
                                          const Transport* control) {
  DeviceGuard guard(device_.index);
  ncclConfig_t config = nonblocking_config();
  ncclComm_t raw = nullptr;
  const ncclResult_t started =
      ncclCommSplit(comm_, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, &raw, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    if (raw != nullptr) (void)ncclCommAbort(raw);
    throw nccl_collective_error(started, str("ncclCommSplit (color ", color, ", key ", key, ")"),
                                ncclGetLastError(comm_));
  }
  // The split is a collective of this communicator: it completes when every rank called it.
  const ncclResult_t parent_state = settle("ncclCommSplit", deadline, control);
  if (parent_state != ncclSuccess) {
    if (raw != nullptr) (void)ncclCommAbort(raw);
    throw nccl_collective_error(parent_state, "ncclCommSplit", ncclGetLastError(comm_));
  }
  if (raw == nullptr) return nullptr;  // NCCL_SPLIT_NOCOLOR
  auto group = std::make_shared<NcclComm>(raw, device_);
  const ncclResult_t state = group->settle("ncclCommSplit", deadline, control);
  if (state != ncclSuccess) {
    group->abort();
    throw nccl_collective_error(state, "ncclCommSplit", ncclGetLastError(raw));
  }
  return group;
}

std::vector<std::shared_ptr<NcclComm>> NcclComm::init_all(const std::vector<Device>& devices,
                                                          const Deadline& deadline) {
  const int n = static_cast<int>(devices.size());
  for (const Device& d : devices) require_device("NcclComm::init_all", d.index);
  ncclUniqueId id;
  RUCCL_NCCL_CHECK(ncclGetUniqueId(&id));
  ncclConfig_t config = nonblocking_config();
  std::vector<ncclComm_t> raw(devices.size(), nullptr);
  RUCCL_NCCL_CHECK(ncclGroupStart());
  ncclResult_t first = ncclSuccess;
  for (int i = 0; i < n; ++i) {
    RUCCL_CUDA_CHECK(cudaSetDevice(devices[static_cast<std::size_t>(i)].index));
    const ncclResult_t r =
        ncclCommInitRankConfig(&raw[static_cast<std::size_t>(i)], n, id, i, &config);
    if (r != ncclSuccess && r != ncclInProgress && first == ncclSuccess) first = r;
  }
  const ncclResult_t ended = ncclGroupEnd();
  if (first == ncclSuccess && ended != ncclSuccess && ended != ncclInProgress) first = ended;
  std::vector<std::shared_ptr<NcclComm>> comms;
  auto clique = std::make_shared<Clique>();
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (raw[k] == nullptr) continue;
    ++clique->remaining;
    comms.push_back(std::make_shared<NcclComm>(raw[k], devices[k], clique));
  }
  auto abort_all = [&] {
    for (auto& c : comms) c->abort();
  };
  if (first != ncclSuccess || comms.size() != devices.size()) {
    abort_all();
    throw nccl_collective_error(first == ncclSuccess ? ncclInternalError : first,
                                "ncclCommInitRankConfig (one process, several GPUs)",
                                ncclGetLastError(nullptr));
  }
  for (auto& c : comms) {
    ncclResult_t state = ncclSuccess;
    try {
      state = c->settle("NCCL communicator initialisation", deadline, nullptr);
    } catch (...) {
      abort_all();
      throw;
    }
    if (state != ncclSuccess) {
      abort_all();
      throw nccl_collective_error(state, "NCCL communicator initialisation",
                                  ncclGetLastError(nullptr));
    }
  }
  return comms;
}

void NcclComm::abort() noexcept {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (aborted_.load()) return;
  int previous = -1;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_.index);
  (void)ncclCommAbort(comm_);
  if (previous >= 0) (void)cudaSetDevice(previous);
  aborted_.store(true);
}

namespace {

// Waits (bounded: a peer that is gone keeps a finalisation in progress forever) until every
// communicator finalised, then destroys it; aborts any that did not.
void finish(const std::vector<std::pair<ncclComm_t, int>>& comms) {
  const auto until = Deadline::Clock::now() + std::chrono::seconds(10);
  std::vector<ncclResult_t> states(comms.size(), ncclInProgress);
  for (bool pending = true; pending && Deadline::Clock::now() < until;) {
    pending = false;
    for (std::size_t i = 0; i < comms.size(); ++i) {
      if (states[i] != ncclInProgress) continue;
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comms[i].first, &state) != ncclSuccess) state = ncclInternalError;
      states[i] = state;
      pending = pending || state == ncclInProgress;
    }
    if (pending) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  for (std::size_t i = 0; i < comms.size(); ++i) {
    (void)cudaSetDevice(comms[i].second);
    if (states[i] == ncclSuccess) {
      (void)ncclCommDestroy(comms[i].first);
    } else {
      (void)ncclCommAbort(comms[i].first);
    }
  }
}

}  // namespace

NcclComm::~NcclComm() {
  if (aborted_.load()) {  // ncclCommAbort freed it; the clique's last one finishes the others
    if (clique_ == nullptr) return;
    std::vector<std::pair<ncclComm_t, int>> all;
    {
      std::lock_guard<std::mutex> lock(clique_->mutex);
      if (--clique_->remaining == 0) all.swap(clique_->finalizing);
    }
    if (!all.empty()) finish(all);
    return;
  }
  int previous = -1;
  (void)cudaGetDevice(&previous);
  (void)cudaSetDevice(device_.index);
  const ncclResult_t finalizing = ncclCommFinalize(comm_);  // nonblocking: starts it
  const bool failed = finalizing != ncclSuccess && finalizing != ncclInProgress;
  if (failed) (void)ncclCommAbort(comm_);
  if (clique_ == nullptr) {
    if (!failed) finish({{comm_, device_.index}});
  } else {
    // A failed finalize still counts this member out of the clique (its comm is aborted, not
    // queued), so the last member finishes the others.
    std::vector<std::pair<ncclComm_t, int>> all;
    {
      std::lock_guard<std::mutex> lock(clique_->mutex);
      if (!failed) clique_->finalizing.emplace_back(comm_, device_.index);
      if (--clique_->remaining == 0) all.swap(clique_->finalizing);
    }
    if (!all.empty()) finish(all);
  }
  if (previous >= 0) (void)cudaSetDevice(previous);
}

}  // namespace ruccl::cuda
