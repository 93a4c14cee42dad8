// cuda_ops_bench: the CUDA backend against the device's own limits, measured in one run with CUDA
// events on one stream:
//   - elementwise add (c = a + b, backend call into a preallocated output) and a full sum, both on
//     64M float32 (256 MiB per array), against cudaMemcpy device-to-device of 256 MiB (target
//     >= 0.8x of its bandwidth). GB/s = 1e9 bytes/s counted as bytes read + bytes written:
//     memcpy 2 x 256 MiB, add 3 x 256 MiB, sum 1 x 256 MiB;
//   - matmul (backend call) in F32 and BF16 against a bare cublasGemmEx of the same shape and
//     types on the same handle settings (target >= 0.95x of its TFLOP/s).
// Median of `reps` timed calls after warm-up. Without a GPU it says why and exits 1.
// Usage: cuda_ops_bench [reps]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "cuda/cuda.h"
#include "tensor/tensor.h"

using namespace ruccl;

namespace {

/// Median milliseconds of fn over `reps` runs timed with events on the default stream.
double median_ms(int reps, const std::function<void()>& fn) {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  RUCCL_CUDA_CHECK(cudaEventCreate(&start));
  RUCCL_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) fn();  // warm-up (allocator, cuBLAS heuristics)
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    RUCCL_CUDA_CHECK(cudaEventRecord(start, nullptr));
    fn();
    RUCCL_CUDA_CHECK(cudaEventRecord(stop, nullptr));
    RUCCL_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    RUCCL_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  RUCCL_CUDA_CHECK(cudaEventDestroy(start));
  RUCCL_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Row {
  const char* name;
  double ours;
  double peer;
  double target;
  const char* unit;
};

void print(const Row& r) {
  const double ratio = r.ours / r.peer;
  std::printf("| %s | %.1f %s | %.1f %s | %.2f | %.2f | %s |\n", r.name, r.ours, r.unit, r.peer,
              r.unit, ratio, r.target, ratio >= r.target ? "met" : "SHORT");
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(3, std::atoi(argv[1])) : 20;
  if (!cuda::cuda_available()) {
    std::fprintf(stderr, "cuda_ops_bench: needs a GPU: %s\n", cuda::device_status().c_str());
    return 1;
  }
  const Device gpu = Device::cuda(0);
  Backend& backend = backend_for(gpu);
  std::printf("## CUDA backend against the device's own limits (%s)\n\n",
              cuda::device_status().c_str());
  std::printf("| kernel | ours | peer (same run) | ratio | target | verdict |\n");
  std::printf("|---|---:|---:|---:|---:|---|\n");
  std::vector<Row> rows;

  constexpr std::int64_t kN = std::int64_t{64} << 20;
  const double bytes = static_cast<double>(kN) * sizeof(float);
  Generator gen(1);
  const Tensor a = Tensor::rand({kN}, gen, DType::F32).to(gpu);
  const Tensor b = Tensor::rand({kN}, gen, DType::F32).to(gpu);
  const Tensor c = Tensor::empty({kN}, DType::F32, gpu);
  const Tensor s = Tensor::empty({1}, DType::F32, gpu);
  const double memcpy_ms = median_ms(reps, [&] {
    RUCCL_CUDA_CHECK(cudaMemcpyAsync(c.data_ptr(), a.data_ptr(), static_cast<std::size_t>(bytes),
                                     cudaMemcpyDeviceToDevice, nullptr));
  });
  const double memcpy_gbs = 2 * bytes / (memcpy_ms * 1e6);
  const double add_ms = median_ms(reps, [&] { backend.binary(Op::Add, a, b, c); });
  rows.push_back({"add F32 64M (backend, preallocated out)", 3 * bytes / (add_ms * 1e6), memcpy_gbs,
                  0.8, "GB/s"});
  const std::int64_t all[] = {0};
  const double sum_ms = median_ms(reps, [&] { backend.reduce(Op::Sum, a, all, s); });
  rows.push_back({"sum F32 64M -> 1 (backend)", bytes / (sum_ms * 1e6), memcpy_gbs, 0.8, "GB/s"});

  for (const DType dt : {DType::F32, DType::BF16}) {
    constexpr std::int64_t kM = 8192;
    const Tensor x = Tensor::rand({1, kM, kM}, gen, DType::F32).to(dt).to(gpu);
    const Tensor y = Tensor::rand({1, kM, kM}, gen, DType::F32).to(dt).to(gpu);
    const Tensor z = Tensor::empty({1, kM, kM}, dt, gpu);
    const double flops = 2.0 * kM * kM * kM;
    const double ours_ms = median_ms(reps, [&] { backend.matmul(x, y, z); });
    cublasHandle_t handle = nullptr;
    RUCCL_CUBLAS_CHECK(cublasCreate(&handle));
    const cudaDataType_t type = dt == DType::F32 ? CUDA_R_32F : CUDA_R_16BF;
    const float alpha = 1.0f;
    const float beta = 0.0f;
    const int m = static_cast<int>(kM);
    const double bare_ms = median_ms(reps, [&] {
      RUCCL_CUBLAS_CHECK(cublasGemmEx(
          handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, y.data_ptr(), type, m, x.data_ptr(),
          type, m, &beta, z.data_ptr(), type, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    RUCCL_CUBLAS_CHECK(cublasDestroy(handle));
    rows.push_back({dt == DType::F32 ? "matmul F32 8192^3 (no TF32)" : "matmul BF16 8192^3",
                    flops / (ours_ms * 1e9), flops / (bare_ms * 1e9), 0.95, "TFLOP/s"});
  }
  for (Row& r : rows) {
    if (r.unit[0] == 'T') {
      r.ours /= 1e3;
      r.peer /= 1e3;
    }
    print(r);
  }
  std::printf("\nmemcpy device-to-device: %.1f GB/s (%.3f ms for 256 MiB)\n", memcpy_gbs,
              memcpy_ms);
  return 0;
}
