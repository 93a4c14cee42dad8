#include "cuda/blas/cublas_handle.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "cuda/blas/cublas_workspace.h"
#include "cuda/core/check.h"
#include "cuda/memory/caching_allocator.h"

namespace ruccl::cuda {

namespace {

struct Pool {
  std::mutex mutex;
  std::map<int, std::vector<cublasHandle_t>> idle;  // by device
  // One workspace per (handle, stream), kept for the process as the handles are: a handle that
  // goes back to the pool finds its workspaces again in the thread that takes it next.
  std::map<std::pair<cublasHandle_t, cudaStream_t>, std::shared_ptr<Storage>> workspaces;
  std::map<int, std::size_t> workspace_bytes;  // by device
};

Pool& pool() {
  static auto* p = new Pool();  // leaked on purpose: threads may return handles during exit
  return *p;
}

/// The workspace of (handle, stream) on `device`, from the caching allocator the first time.
std::pair<void*, std::size_t> workspace_for(cublasHandle_t handle, cudaStream_t stream,
                                            int device) {
  Pool& p = pool();
  const std::lock_guard<std::mutex> lock(p.mutex);
  auto size = p.workspace_bytes.find(device);
  if (size == p.workspace_bytes.end()) {
    int major = 0;
    RUCCL_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    size =
        p.workspace_bytes
            .emplace(device, cublas_workspace_bytes(major, std::getenv("CUBLAS_WORKSPACE_CONFIG")))
            .first;
  }
  auto& ws = p.workspaces[{handle, stream}];
  if (ws == nullptr && size->second > 0) {
    ws = allocate_storage(size->second, Device::cuda(device));
    // Allocated on the device's current stream; cuBLAS uses it on `stream` (never freed, but
    // say so for the allocator's bookkeeping should it ever be).
    record_stream(*ws, stream);
  }
  return {ws != nullptr ? ws->data() : nullptr, size->second};
}

struct ThreadHandles {
  std::map<int, cublasHandle_t> by_device;
  // This thread's handles' workspaces by (device, stream): no lock after the first call.
  std::map<std::pair<int, cudaStream_t>, std::pair<void*, std::size_t>> workspaces;
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
  // cublasSetStream resets the handle to cuBLAS's default workspace, which every stream the
  // handle is bound to would share (a GEMM on one stream racing one on another over it): bind the
  // (handle, stream) pair's own workspace after it, as PyTorch does.
  auto ws = handles.workspaces.find({device, stream});
  if (ws == handles.workspaces.end()) {
    ws = handles.workspaces
             .emplace(std::pair{device, stream}, workspace_for(it->second, stream, device))
             .first;
  }
  RUCCL_CUBLAS_CHECK(cublasSetWorkspace(it->second, ws->second.first, ws->second.second));
  return it->second;
}

}  // namespace ruccl::cuda
