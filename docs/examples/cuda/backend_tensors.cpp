// ruccl-gpu
// docs/cuda.md, "The CUDA backend": tensors on a GPU through the plain tensor API, checked
// against the same math on the CPU. Runs only where a GPU is (CTest label gpu).
#include <cmath>
#include <cstdio>

#include "tensor/tensor.h"  // the backend needs no include: linking ruccl::ruccl registers it

using namespace ruccl;

int main() {
  // doc-begin
  Generator gen(0);
  Tensor x = Tensor::randn({1024, 512}, gen).to(Device::cuda(0));  // host -> device
  Tensor w = Tensor::randn({512, 256}, gen).to(Device::cuda(0));
  Tensor y = softmax(matmul(x, w) + 1.0, 1);                         // kernels and cuBLAS
  std::vector<float> host = y.to(Device::cpu()).to_vector<float>();  // device -> host
  // doc-end
  const std::vector<float> want =
      softmax(matmul(x.to(Device::cpu()), w.to(Device::cpu())) + 1.0, 1).to_vector<float>();
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(host[i]) - want[i]));
  }
  if (y.device() != Device::cuda(0) || host.size() != want.size() || worst > 1e-4) {
    std::printf("FAIL: backend_tensors: on %s, largest difference from the CPU %g\n",
                y.device().to_string().c_str(), worst);
    return 1;
  }
  std::printf("OK: backend_tensors (largest difference from the CPU %g)\n", worst);
  return 0;
}
