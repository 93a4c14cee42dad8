#include "cuda/core/self_test.h"

#include <cstdint>
#include <vector>

#include "cuda/core/check.h"
#include "cuda/core/device.h"
#include "cuda/kernels/self_test_kernels.cuh"

namespace ruccl::cuda {
namespace {

/// Device memory freed on scope exit (errors on free are ignored: we may already be unwinding).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t nbytes) { RUCCL_CUDA_CHECK(cudaMalloc(&ptr_, nbytes)); }
  ~DeviceBuffer() { (void)cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* get() const { return static_cast<float*>(ptr_); }

 private:
  void* ptr_ = nullptr;
};

/// A stream and a cuBLAS handle bound to it, destroyed on scope exit.
class StreamAndBlas {
 public:
  StreamAndBlas() {
    RUCCL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    RUCCL_CUBLAS_CHECK(cublasCreate(&blas_));
    RUCCL_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
  }
  ~StreamAndBlas() {
    if (blas_ != nullptr) (void)cublasDestroy(blas_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  StreamAndBlas(const StreamAndBlas&) = delete;
  StreamAndBlas& operator=(const StreamAndBlas&) = delete;
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t blas() const { return blas_; }

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
};

}  // namespace

SelfTestReport run_self_test(int device) {
  require_device("cuda::run_self_test", device);
  RUCCL_CUDA_CHECK(cudaSetDevice(device));

  SelfTestReport report;
  report.device = device;
  report.device_status = device_status();
  RUCCL_NCCL_CHECK(ncclGetVersion(&report.nccl_version));

  // x[i] in {-3..3}: y = 0.5x + 3 and dot(x, x) <= 9n < 2^24 are exact in float32 in any order,
  // so the comparisons below are exact. n is odd and spans several blocks.
  constexpr std::int64_t kN = 4099;
  std::vector<float> x(kN);
  double expected_dot = 0.0;
  for (std::int64_t i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i % 7 - 3);
    expected_dot += static_cast<double>(x[i]) * x[i];
  }
  const std::size_t nbytes = sizeof(float) * kN;
  DeviceBuffer dx(nbytes);
  DeviceBuffer dy(nbytes);
  StreamAndBlas ctx;
  RUCCL_CUBLAS_CHECK(cublasGetVersion(ctx.blas(), &report.cublas_version));
  RUCCL_CUDA_CHECK(
      cudaMemcpyAsync(dx.get(), x.data(), nbytes, cudaMemcpyHostToDevice, ctx.stream()));
  launch_affine(dx.get(), dy.get(), kN, 0.5f, 3.0f, ctx.stream());
  float dot = 0.0f;
  RUCCL_CUBLAS_CHECK(cublasSdot(ctx.blas(), static_cast<int>(kN), dx.get(), 1, dx.get(), 1, &dot));
  std::vector<float> y(kN);
  RUCCL_CUDA_CHECK(
      cudaMemcpyAsync(y.data(), dy.get(), nbytes, cudaMemcpyDeviceToHost, ctx.stream()));
  RUCCL_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));

  for (std::int64_t i = 0; i < kN; ++i) {
    const float want = 0.5f * x[i] + 3.0f;
    RUCCL_ASSERT(y[i] == want, "cuda self-test: affine kernel wrote y[", i, "] = ", y[i],
                 ", expected ", want);
  }
  RUCCL_ASSERT(static_cast<double>(dot) == expected_dot, "cuda self-test: cublasSdot gave ", dot,
               ", expected ", expected_dot);
  return report;
}

}  // namespace ruccl::cuda
