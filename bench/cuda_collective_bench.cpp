// cuda_collective_bench: in-process collectives of four logical ranks sharing GPU 0 (the device
// path: device-to-device copies and the fold kernels, cuda/collective/peer_collectives.h) against
// the device's own copy bandwidth (cudaMemcpy device to device, same run):
//   - the all_reduce demo's size (257 F32) and 64 MiB, ring and direct, Sum;
//   - the copy bandwidth of a 64 MiB cudaMemcpyAsync device to device;
//   - the NCCL engine's cost per call on one GPU: a 1-rank NcclGroup's all_reduce of 4 bytes (the
//     agreement over the in-process control channel, NCCL, the completion poll) against a bare
//     ncclAllReduce + cudaStreamSynchronize on a communicator of our own.
// Method: per iteration every rank runs barrier(), then times one all_reduce and the
// synchronisation of its stream (the result is on the device); the iteration's time is the max
// over ranks; the table shows the median. algbw = bytes / time, busbw = algbw * 2(n-1)/n (as
// nccl-tests). Copy bandwidth = bytes / time of one copy (each byte read once and written once).
// The last line is the summary tools/gpu_check.sh keeps. Fails loudly (exit 1) without a GPU.
//
//   cuda_collective_bench [--iters N]     (default 20; 64 MiB runs N / 2)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "cuda/collective/device_engine.h"
#include "cuda/collective/nccl_group.h"
#include "cuda/core/check.h"
#include "cuda/core/device.h"
#include "cuda/core/stream.h"
#include "tensor/tensor.h"

namespace {

using namespace ruccl;
using Clock = std::chrono::steady_clock;
constexpr int kRanks = 4;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median over iterations of the slowest rank's all_reduce time, in seconds.
double time_all_reduce(std::int64_t count, Algorithm algorithm, int iters) {
  CommunicatorOptions options;
  options.all_reduce_algorithm = algorithm;
  std::vector<Communicator> comms =
      InProcessGroup::create(kRanks, std::vector<Device>(kRanks, Device::cuda(0)), options);
  std::vector<std::vector<double>> seconds(kRanks, std::vector<double>(iters));
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      try {
        Communicator& c = comms[static_cast<std::size_t>(r)];
        const Tensor t = Tensor::full({count}, 1.0 + r, DType::F32, Device::cuda(0));
        for (int w = 0; w < 2; ++w) (void)c.all_reduce(t);  // warm-up (allocator, events)
        RUCCL_CUDA_CHECK(cudaDeviceSynchronize());
        for (int i = 0; i < iters; ++i) {
          c.barrier();
          const auto start = Clock::now();
          const Tensor out = c.all_reduce(t);
          RUCCL_CUDA_CHECK(cudaStreamSynchronize(cuda::current_stream(0)));
          seconds[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] =
              std::chrono::duration<double>(Clock::now() - start).count();
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
        comms[static_cast<std::size_t>(r)].abort(e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (!e.empty()) throw std::runtime_error(e);
  }
  std::vector<double> worst(static_cast<std::size_t>(iters), 0.0);
  for (const auto& rank : seconds) {
    for (int i = 0; i < iters; ++i) {
      worst[static_cast<std::size_t>(i)] =
          std::max(worst[static_cast<std::size_t>(i)], rank[static_cast<std::size_t>(i)]);
    }
  }
  return median(worst);
}

// Bytes per second of one device-to-device cudaMemcpyAsync of `bytes` (median of `iters`).
double copy_bandwidth(std::size_t bytes, int iters) {
  void* a = nullptr;
  void* b = nullptr;
  RUCCL_CUDA_CHECK(cudaMalloc(&a, bytes));
  RUCCL_CUDA_CHECK(cudaMalloc(&b, bytes));
  RUCCL_CUDA_CHECK(cudaMemset(a, 1, bytes));
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  RUCCL_CUDA_CHECK(cudaEventCreate(&start));
  RUCCL_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> rates;
  for (int i = 0; i < iters + 2; ++i) {
    RUCCL_CUDA_CHECK(cudaEventRecord(start, nullptr));
    RUCCL_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, nullptr));
    RUCCL_CUDA_CHECK(cudaEventRecord(stop, nullptr));
    RUCCL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    RUCCL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 2) rates.push_back(static_cast<double>(bytes) / (ms * 1e-3));
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  (void)cudaFree(a);
  (void)cudaFree(b);
  return median(rates);
}

// Median seconds per call: ruCCL's NCCL engine (1 rank) and a bare NCCL call, 4-byte all_reduce.
std::pair<double, double> nccl_call_cost(int iters) {
  std::vector<Communicator> comms = cuda::NcclGroup::create({Device::cuda(0)});
  const Tensor t = Tensor::full({1}, 1.0, DType::F32, Device::cuda(0));
  std::vector<double> ours;
  for (int i = 0; i < iters + 5; ++i) {
    const auto start = Clock::now();
    const Tensor out = comms[0].all_reduce(t);  // returns once NCCL completed (the watchdog)
    if (i >= 5) ours.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  ncclComm_t comm = nullptr;
  const int device = 0;
  RUCCL_NCCL_CHECK(ncclCommInitAll(&comm, 1, &device));
  void* buf = nullptr;
  RUCCL_CUDA_CHECK(cudaMalloc(&buf, 8));
  const cudaStream_t stream = cuda::current_stream(0);
  std::vector<double> bare;
  for (int i = 0; i < iters + 5; ++i) {
    const auto start = Clock::now();
    RUCCL_NCCL_CHECK(
        ncclAllReduce(buf, static_cast<char*>(buf) + 4, 1, ncclFloat32, ncclSum, comm, stream));
    RUCCL_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (i >= 5) bare.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  (void)cudaFree(buf);
  (void)ncclCommDestroy(comm);
  return {median(ours), median(bare)};
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      iters = std::max(2, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: cuda_collective_bench [--iters N]\n");
      return 2;
    }
  }
  if (!cuda::cuda_available()) {
    std::fprintf(stderr, "cuda_collective_bench: FAIL: needs a CUDA GPU: %s\n",
                 cuda::device_status().c_str());
    return 1;
  }
  try {
    cuda::install_collectives();
    std::printf("cuda_collective_bench: %s\n", cuda::device_status().c_str());
    constexpr std::size_t kBig = std::size_t{64} << 20;
    const double copy = copy_bandwidth(kBig, iters);
    std::printf("cudaMemcpy device to device, 64 MiB: %.1f GB/s\n\n", copy / 1e9);
    std::printf(
        "| all_reduce, %d ranks on cuda:0 | algorithm | time (us) | algbw (GB/s) | busbw "
        "(GB/s) | busbw / copy |\n|---|---|---:|---:|---:|---:|\n",
        kRanks);
    double big_ring_ratio = 0.0;
    double demo_us = 0.0;
    for (const auto& [count, label] :
         {std::pair<std::int64_t, const char*>{257, "257 F32 (the demo)"},
          std::pair<std::int64_t, const char*>{static_cast<std::int64_t>(kBig / 4), "64 MiB"}}) {
      for (Algorithm a : {Algorithm::Ring, Algorithm::Direct}) {
        const double s = time_all_reduce(count, a, count > 1000 ? std::max(2, iters / 2) : iters);
        const double bytes = static_cast<double>(count) * 4.0;
        const double algbw = bytes / s;
        const double busbw = algbw * 2.0 * (kRanks - 1) / kRanks;
        std::printf("| %s | %s | %.1f | %.2f | %.2f | %.3f |\n", label, algorithm_name(a), s * 1e6,
                    algbw / 1e9, busbw / 1e9, busbw / copy);
        if (count > 1000 && a == Algorithm::Ring) big_ring_ratio = busbw / copy;
        if (count == 257 && a == Algorithm::Ring) demo_us = s * 1e6;
      }
    }
    const auto [ours, bare] = nccl_call_cost(iters * 5);
    std::printf(
        "\n| NCCL, 1 rank on cuda:0, all_reduce of 4 bytes | us per call |\n|---|---:|\n"
        "| ruCCL NcclEngine (agreement + NCCL + completion) | %.1f |\n"
        "| bare ncclAllReduce + cudaStreamSynchronize | %.1f |\n"
        "| the engine's cost per call | %.1f |\n",
        ours * 1e6, bare * 1e6, (ours - bare) * 1e6);
    std::printf(
        "\ncuda_collective_bench: OK: demo ring all_reduce %.1f us; 64 MiB ring busbw %.3f x "
        "copy bandwidth (%.1f GB/s); NCCL engine +%.1f us per call\n",
        demo_us, big_ring_ratio, copy / 1e9, (ours - bare) * 1e6);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_collective_bench: FAIL: %s\n", e.what());
    return 1;
  }
}
