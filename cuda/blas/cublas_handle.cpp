#include "cuda/blas/cublas_handle.h"

#include <map>
#include <mutex>
#include <vector>

#include "cuda/core/check.h"

namespace ruccl::cuda {

namespace {

struct Pool {
  std::mutex mutex;
  std::map<int, std::vector<cublasHandle_t>> idle;  // by device
};

Pool& pool() {
  static auto* p = new Pool();  // leaked on purpose: threads may return handles during exit
  return *p;
}

struct ThreadHandles {
  std::map<int, cublasHandle_t> by_device;
  ~ThreadHandles() {
    Pool& p = pool();
    const std::lock_guard<std::mutex> lock(p.mutex);
    for (const auto& [device, handle] : by_device) p.idle[device].push_back(handle);
  }
};

}  // namespace

cublasHandle_t handle_for(cudaStream_t stream) {
  thread_local ThreadHandles handles;
  int device = 0;
  RUCCL_CUDA_CHECK(cudaGetDevice(&device));
  auto it = handles.by_device.find(device);
  if (it == handles.by_device.end()) {
    cublasHandle_t h = nullptr;
    {
      Pool& p = pool();
      const std::lock_guard<std::mutex> lock(p.mutex);
      auto& idle = p.idle[device];
      if (!idle.empty()) {
        h = idle.back();
        idle.pop_back();
      }
    }
    if (h == nullptr) RUCCL_CUBLAS_CHECK(cublasCreate(&h));
    it = handles.by_device.emplace(device, h).first;
  }
  RUCCL_CUBLAS_CHECK(cublasSetStream(it->second, stream));
  return it->second;
}

}  // namespace ruccl::cuda
