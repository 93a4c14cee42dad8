// all_reduce: the Ring all-reduce demo through the registered session API. Four logical ranks
// (threads) register on one device with the ring strategy; rank r holds v[i] = 0.25 i + r (i =
// 0..256), computes t = 2v + 1 on the device, then all-reduces: Sum must be exactly 2i + 16 and
// Mean exactly (2i + 16) / 4 on every rank, the inputs unchanged, and every peer finishes the
// session.
//
//   all_reduce [--device cpu|cuda]
//
// The default device is cuda (GPU 0) in a build with CUDA: the four ranks are threads sharing the
// GPU, and their ring all-reduce moves device memory device to device with the fold kernels, in
// the CPU's reduction order (docs/cuda.md, "Collectives on GPUs"). On a machine without a GPU (or
// a build without CUDA) it says so and exits 1. --device cpu runs it on the CPU (a CTest test,
// label example).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "ruccl/config.h"
#include "tensor/tensor.h"
#if RUCCL_WITH_CUDA
#include "cuda/core/device.h"
#endif

namespace {

using namespace ruccl;

constexpr int kRanks = 4;
constexpr std::int64_t kCount = 257;

// Checks one rank's results; returns "" or what was wrong.
std::string check(int r, const Tensor& v, const Tensor& t, const Tensor& sum, const Tensor& mean,
                  const Tensor& t_before) {
  const std::vector<float> s = sum.to(Device::cpu()).to_vector<float>();
  const std::vector<float> m = mean.to(Device::cpu()).to_vector<float>();
  const std::vector<float> vv = v.to(Device::cpu()).to_vector<float>();
  const std::vector<float> tt = t.to(Device::cpu()).to_vector<float>();
  const std::vector<float> tb = t_before.to(Device::cpu()).to_vector<float>();
  for (std::int64_t i = 0; i < kCount; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const float expected_sum = static_cast<float>(2 * i + 16);
    if (s[k] != expected_sum)
      return str("rank ", r, " Sum[", i, "] = ", s[k], ", expected ", expected_sum);
    if (m[k] != expected_sum / 4)
      return str("rank ", r, " Mean[", i, "] = ", m[k], ", expected ", expected_sum / 4);
    if (vv[k] != 0.25f * static_cast<float>(i) + static_cast<float>(r) || tt[k] != tb[k]) {
      return str("rank ", r, " input changed at ", i);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = RUCCL_WITH_CUDA ? "cuda" : "cpu";
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--device") == 0 && a + 1 < argc) {
      device_name = argv[++a];
    } else if (std::strncmp(argv[a], "--device=", 9) == 0) {
      device_name = argv[a] + 9;
    } else {
      std::fprintf(stderr, "usage: all_reduce [--device cpu|cuda]\n");
      return 2;
    }
  }
  if (device_name != "cpu" && device_name != "cuda") {
    std::fprintf(stderr, "all_reduce: expected --device cpu or cuda, got %s\n",
                 device_name.c_str());
    return 2;
  }
  const Device device = device_name == "cpu" ? Device::cpu() : Device::cuda(0);
  if (device.is_cuda()) {
#if RUCCL_WITH_CUDA
    if (!cuda::cuda_available()) {
      std::printf("all_reduce: %s; run with --device cpu\n", cuda::device_status().c_str());
      return 1;
    }
#endif
    if (!has_backend(DeviceType::CUDA)) {
      std::printf(
          "all_reduce: this build has no CUDA tensor backend (configure with "
          "-DRUCCL_WITH_CUDA=ON), so the demo cannot run on a GPU; run with --device cpu\n");
      return 1;
    }
  }

  const CollectiveConfig config =
      CollectiveConfig().with_num_devices(kRanks).with_local_all_reduce_strategy(Strategy::ring());
  std::vector<std::string> failures(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      const PeerId id(static_cast<std::uint32_t>(r));
      try {
        register_peer(id, device, config);
        const Tensor v =
            Tensor::arange(0, kCount, 1, DType::F32, device) * 0.25 + static_cast<double>(r);
        const Tensor t = 2.0 * v + 1.0;
        const Tensor t_before = t.clone();
        const Tensor sum = all_reduce(id, t, ReduceOperation::Sum);
        const Tensor mean = all_reduce(id, t, ReduceOperation::Mean);
        failures[static_cast<std::size_t>(r)] = check(r, v, t, sum, mean, t_before);
        finish_collective(id);
      } catch (const std::exception& e) {
        failures[static_cast<std::size_t>(r)] = str("rank ", r, ": ", e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& f : failures) {
    if (!f.empty()) {
      std::printf("all_reduce: FAIL on %s: %s\n", device.to_string().c_str(), f.c_str());
      return 1;
    }
  }
  std::printf(
      "all_reduce: OK on %s: ring all-reduce over %d logical ranks of %lld F32 values: Sum = 2i + "
      "16 and Mean = (2i + 16) / 4 exactly, inputs unchanged, all peers finished\n",
      device.to_string().c_str(), kRanks, static_cast<long long>(kCount));
  return 0;
}
