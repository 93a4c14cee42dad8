#include "cuda/kernels/launch.h"

#include <cuda_runtime.h>

#include <array>
#include <atomic>

#include "cuda/core/check.h"

namespace ruccl::cuda {

namespace {
constexpr int kMaxDevices = 64;
std::array<std::atomic<int>, kMaxDevices> g_sm_count{};  // 0: not queried yet
}  // namespace

int multiprocessor_count() {
  int device = 0;
  RUCCL_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices) device = 0;
  int count = g_sm_count[static_cast<std::size_t>(device)].load(std::memory_order_relaxed);
  if (count == 0) {
    RUCCL_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    g_sm_count[static_cast<std::size_t>(device)].store(count, std::memory_order_relaxed);
  }
  return count;
}

std::int64_t max_resident_blocks(int threads) {
  constexpr int kResidentThreads = 2048;
  return std::int64_t{2} * multiprocessor_count() * (kResidentThreads / threads);
}

}  // namespace ruccl::cuda
