#include "cuda/core/device.h"

#include <cuda_runtime.h>

#include <sstream>

#include "tensor/core/error.h"

namespace ruccl::cuda {
namespace {

/// cudaGetDeviceCount without throwing: the count, or 0 and the reason in `why`.
int query_device_count(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it so later checks start clean
    if (why != nullptr) {
      *why = str("cudaGetDeviceCount failed with ", cudaGetErrorName(status), " (",
                 cudaGetErrorString(status), ")");
      if (status == cudaErrorInsufficientDriver || status == cudaErrorNoDevice) {
        *why += "; is an NVIDIA GPU present and its driver loaded (nvidia-smi)?";
      }
    }
    return 0;
  }
  if (count == 0 && why != nullptr) {
    *why = "cudaGetDeviceCount found 0 devices";
  }
  return count;
}

}  // namespace

int device_count() { return query_device_count(nullptr); }

bool cuda_available() { return device_count() > 0; }

std::string device_status() {
  std::string why;
  const int count = query_device_count(&why);
  if (count == 0) {
    return "no CUDA GPU: " + why;
  }
  std::ostringstream out;
  out << count << (count == 1 ? " CUDA device: " : " CUDA devices: ");
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      (void)cudaGetLastError();
      out << (i ? ", " : "") << i << ": (properties unavailable)";
      continue;
    }
    const double gib = static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0);
    out << (i ? ", " : "") << i << ": " << prop.name << " (sm_" << prop.major << prop.minor << ", "
        << static_cast<int>(gib * 10.0 + 0.5) / 10.0 << " GiB)";
  }
  return out.str();
}

void require_device(std::string_view op, int index) {
  std::string why;
  const int count = query_device_count(&why);
  RUCCL_CHECK(count > 0, DeviceError, op, ": expected a CUDA device, got none (", why, ")");
  RUCCL_CHECK(index >= 0 && index < count, DeviceError, op,
              ": expected a CUDA device index in [0, ", count, "), got ", index);
}

}  // namespace ruccl::cuda
