#pragma once
// One rank of bench/ddp_bench: trains a model for a few hundred steps in each way of reducing
// the gradients (compute-only, plain, overlapped with two bucket caps) on the communicator it is
// given -- threads of one process or processes over TCP -- and returns the step times, the
// slowest rank's per step.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/nn/sequential.h"
#include "collective/communicator.h"

namespace ruccl::bench {

/// How a step's gradients are reduced.
enum class DdpMode {
  ComputeOnly,  ///< none: each rank steps with its own gradient (the floor overlap aims at)
  Plain,        ///< backward, then DataParallel::reduce
  Overlapped,   ///< DataParallel::backward with options.overlap: buckets reduced during backward
};

struct DdpModeSpec {
  std::string name;  ///< a column name of the table
  DdpMode mode = DdpMode::Plain;
  std::int64_t bucket_cap_bytes = 25LL << 20;  ///< Overlapped: DataParallelOptions's caps
  std::int64_t first_bucket_cap_bytes = 1LL << 20;
};

struct DdpWorkload {
  std::string model = "mlp";  ///< "mlp" (784-512-512-10) or "wide" (784-2048-2048-10)
  std::int64_t batch = 128;   ///< per rank
  int warmup = 20;            ///< untimed steps before a mode's first timed ones
  int steps = 200;            ///< timed steps per mode, split over the rounds
  int rounds = 10;            ///< the modes take turns, `rounds` times (the machine's noise)
  std::vector<DdpModeSpec> modes;
};

/// One mode's figures; every rank returns the same ones.
struct DdpModeTiming {
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
  double comm_ms = 0;  ///< Plain: the median time in DataParallel::reduce (see the .cpp)
  int buckets = 0;     ///< Overlapped: the buckets of the plan
  double last_loss = 0;
};

/// The model of `name` ("mlp" or "wide"), seeded; std::invalid_argument for another name.
std::shared_ptr<nn::Sequential> make_ddp_model(const std::string& name);

/// The layer widths of `name`, e.g. "784-512-512-10", and its gradient bytes (F32).
std::string ddp_model_text(const std::string& name);
std::int64_t ddp_model_gradient_bytes(const std::string& name);

/// Runs `work` on this rank of `comm` (every rank calls it, with the same `work`). Marks the
/// step, forward, backward and optimizer on comm.trace() (free when the trace is off).
std::vector<DdpModeTiming> run_ddp_rank(Communicator comm, const DdpWorkload& work);

/// The modes of the table: compute-only, plain, overlapped with the default caps (25 MiB, the
/// first bucket 1 MiB) and with `small_cap` bytes for every bucket.
std::vector<DdpModeSpec> ddp_modes(std::int64_t small_cap);

}  // namespace ruccl::bench
