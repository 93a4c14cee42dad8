// Consumer of an installed ruCCL (tests/install): includes the public headers by their installed
// paths, builds a tensor and checks it, and with CUDA links the device query. Exit 0 on success.
#include <cstdio>
#include <exception>
#include <vector>

#include "ruccl/config.h"
#include "tensor/tensor.h"
#if RUCCL_WITH_CUDA
#include "cuda/core/device.h"
#endif

int main() {
  try {
    const ruccl::Tensor t = ruccl::Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    const std::vector<float> back = t.to_vector<float>();
    const bool ok = t.numel() == 6 && t.dim() == 2 && t.shape()[1] == 3 &&
                    back == std::vector<float>{1, 2, 3, 4, 5, 6};
    std::printf("ruccl %s consumer: %s -> %s\n", RUCCL_VERSION, t.to_string().c_str(),
                ok ? "ok" : "WRONG");
#if RUCCL_WITH_CUDA
    std::printf("ruccl::cuda: %s\n", ruccl::cuda::device_status().c_str());
#endif
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ruccl consumer failed: %s\n", e.what());
    return 1;
  }
}
