// GPU tests (binary ruccl_cuda_tests, CTest label gpu). Every test that needs a device fails with
// the reason when none is usable: this binary never passes silently on a machine without a GPU.
#include <catch2/catch.hpp>

#include <string>

#include "cuda/cuda.h"

namespace {

/// Fails the current test case loudly, with the driver's reason, when no GPU is usable.
void require_gpu() {
  if (!ruccl::cuda::cuda_available()) {
    FAIL("GPU tests need a CUDA device: " << ruccl::cuda::device_status());
  }
}

}  // namespace

TEST_CASE("a CUDA device is present and described by device_status", "[cuda]") {
  require_gpu();
  const std::string status = ruccl::cuda::device_status();
  INFO(status);
  CHECK(ruccl::cuda::device_count() >= 1);
  CHECK(status.find("CUDA device") != std::string::npos);
  CHECK(status.find("sm_") != std::string::npos);
}

TEST_CASE("the device self-test runs our kernel and cuBLAS with exact results", "[cuda]") {
  require_gpu();
  const ruccl::cuda::SelfTestReport report = ruccl::cuda::run_self_test(0);
  INFO(report.device_status);
  CHECK(report.device == 0);
  // The NCCL the loader finds on the GPU machine may be older than the 2.28 linked here; the
  // engine needs 2.14 (nonblocking communicators, ncclCommFinalize).
  INFO("NCCL version code " << report.nccl_version);
  CHECK(report.nccl_version >= 21400);
  CHECK(report.cublas_version > 0);
}

TEST_CASE("RUCCL_CUDA_CHECK throws CudaError naming the statement, file and line", "[cuda]") {
  require_gpu();
  int line = 0;
  try {
    line = __LINE__ + 1;
    RUCCL_CUDA_CHECK(cudaSetDevice(ruccl::cuda::device_count() + 7));
    FAIL("cudaSetDevice with an out-of-range index did not throw");
  } catch (const ruccl::CudaError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(e.api() == ruccl::CudaApi::Runtime);
    CHECK(e.code() == static_cast<int>(cudaErrorInvalidDevice));
    CHECK(e.statement() == "cudaSetDevice(ruccl::cuda::device_count() + 7)");
    CHECK(e.file().find("device_test.cpp") != std::string::npos);
    CHECK(e.line() == line);
    CHECK(what.find("cudaErrorInvalidDevice") != std::string::npos);
    CHECK(what.find("device_test.cpp:" + std::to_string(line)) != std::string::npos);
  }
  // The failed call's status was cleared: the next call starts clean.
  CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("RUCCL_CUBLAS_CHECK and RUCCL_NCCL_CHECK throw CudaError with the library's status",
          "[cuda]") {
  require_gpu();
  // cublasSetStream on a null handle and ncclCommCount on a null communicator are rejected by the
  // libraries themselves without touching a device.
  try {
    RUCCL_CUBLAS_CHECK(cublasSetStream(nullptr, nullptr));
    FAIL("cublasSetStream(nullptr, ...) did not throw");
  } catch (const ruccl::CudaError& e) {
    INFO(e.what());
    CHECK(e.api() == ruccl::CudaApi::Cublas);
    CHECK(e.code() == static_cast<int>(CUBLAS_STATUS_NOT_INITIALIZED));
    CHECK(std::string(e.what()).find("CUBLAS_STATUS_NOT_INITIALIZED") != std::string::npos);
  }
  int count = 0;
  try {
    RUCCL_NCCL_CHECK(ncclCommCount(nullptr, &count));
    FAIL("ncclCommCount(nullptr, ...) did not throw");
  } catch (const ruccl::CudaError& e) {
    INFO(e.what());
    CHECK(e.api() == ruccl::CudaApi::Nccl);
    CHECK(e.code() == static_cast<int>(ncclInvalidArgument));
    CHECK(e.statement() == "ncclCommCount(nullptr, &count)");
  }
}

TEST_CASE("require_device rejects an index that is not a device of this machine", "[cuda]") {
  require_gpu();
  const int count = ruccl::cuda::device_count();
  CHECK_NOTHROW(ruccl::cuda::require_device("test", 0));
  CHECK_THROWS_AS(ruccl::cuda::require_device("test", count), ruccl::DeviceError);
  CHECK_THROWS_AS(ruccl::cuda::require_device("test", -1), ruccl::DeviceError);
}
