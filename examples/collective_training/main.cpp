// collective_training run|resume DIR: two ranks train a Linear(2 -> 1) with gradients averaged by
// GradientsParams::all_reduce_with, verify the exact parameters after each step (the values of
// docs/training.md), and checkpoint after step 1 (`run`) or continue from that checkpoint
// (`resume`).
#include <cstring>
#include <iostream>
#include <string>

#include "collective/communicator.h"
#include "collective/launch/launch_env.h"
#include "examples/collective_training/two_rank_training.h"
#include "ruccl/config.h"
#include "tensor/backend/backend.h"
#if RUCCL_WITH_CUDA
#include "cuda/core/device.h"
#endif

namespace ct = ruccl::examples::collective_training;

namespace {

int usage() {
  std::cerr << "usage: collective_training run DIR      train step 1, save every rank's model "
               "and optimizer in DIR (which must not exist), train step 2\n"
               "       collective_training resume DIR   restore step 1 from DIR, train step 2\n"
               "       either with --device cpu|cuda    (default: cuda:0 when a GPU and the "
               "CUDA backend are there, else cpu)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string asked;  // --device: "", "cpu" or "cuda"
  if (argc == 5 && std::strcmp(argv[3], "--device") == 0) {
    asked = argv[4];
    if (asked != "cpu" && asked != "cuda") return usage();
  } else if (argc != 3) {
    return usage();
  }
  if (std::strcmp(argv[1], "run") != 0 && std::strcmp(argv[1], "resume") != 0) return usage();
  const ct::Mode mode = std::strcmp(argv[1], "run") == 0 ? ct::Mode::Run : ct::Mode::Resume;
  ruccl::Device device = ruccl::Device::cpu();
  if (asked == "cuda") {
#if RUCCL_WITH_CUDA
    if (!ruccl::cuda::cuda_available() || !ruccl::has_backend(ruccl::DeviceType::CUDA)) {
      std::cerr << "collective_training: --device cuda: "
                << (ruccl::cuda::cuda_available() ? std::string("this build has no CUDA tensor "
                                                                "backend")
                                                  : ruccl::cuda::device_status())
                << "\n";
      return 1;
    }
    device = ruccl::Device::cuda(0);
#else
    std::cerr << "collective_training: --device cuda: this build has no CUDA (configure with "
                 "-DRUCCL_WITH_CUDA=ON)\n";
    return 1;
#endif
  }
#if RUCCL_WITH_CUDA
  // Both ranks on the default CUDA device once a GPU and the CUDA tensor backend are there.
  if (asked.empty() && ruccl::cuda::cuda_available()) {
    if (ruccl::has_backend(ruccl::DeviceType::CUDA)) {
      device = ruccl::Device::cuda(0);
    } else {
      std::cout << "collective_training: a GPU is present but this build has no CUDA tensor "
                   "backend yet; running on the CPU\n";
    }
  }
#endif
  try {
    // Under a launcher (ruccl-run --nproc-per-node 2) this process is one of the two ranks and
    // prints its own lines; otherwise both ranks are threads of this process.
    std::array<ct::RankReport, ct::kWorld> reports;
    int first = 0, last = ct::kWorld;
    if (ruccl::environment_describes_job()) {
      ruccl::Communicator comm = ruccl::Communicator::from_env(device);
      first = comm.rank();
      last = first + 1;
      reports[static_cast<std::size_t>(first)] = ct::run_this_rank(comm, mode, argv[2]);
    } else {
      reports = ct::run_two_ranks(mode, argv[2], device);
    }
    std::cout << "collective_training " << argv[1] << " " << argv[2] << ": 2 ranks on " << device
              << (last - first == 1 ? " (processes)" : " (threads)")
              << ", SGD momentum 0.5, lr 0.125\n";
    for (int r = first; r < last; ++r) {
      const auto& rep = reports[static_cast<std::size_t>(r)];
      std::cout << "rank " << r << " after step 1: " << ct::format_values(rep.after_step1)
                << (mode == ct::Mode::Run ? " (saved)" : " (restored)") << "\n";
      std::cout << "rank " << r << " after step 2: " << ct::format_values(rep.after_step2) << "\n";
    }
    std::cout << "OK: both steps match the exact values " << ct::format_values(ct::kAfterStep1)
              << " and " << ct::format_values(ct::kAfterStep2) << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "collective_training: " << e.what() << "\n";
    return 1;
  }
}
