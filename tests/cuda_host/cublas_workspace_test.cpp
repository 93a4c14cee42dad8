// The size of the workspace each (cuBLAS handle, stream) pair gets (cuda/blas/cublas_workspace.h):
// CUBLAS_WORKSPACE_CONFIG read as PyTorch reads it, and the per-architecture defaults.
#include <catch2/catch.hpp>

#include "cuda/blas/cublas_workspace.h"

using ruccl::cuda::cublas_workspace_bytes;
using ruccl::cuda::parse_cublas_workspace_config;

TEST_CASE("CUBLAS_WORKSPACE_CONFIG sums SIZE_KiB times COUNT over its pairs",
          "[cuda_host][cublas]") {
  CHECK(parse_cublas_workspace_config(":4096:8") == std::size_t{32} << 20);
  CHECK(parse_cublas_workspace_config(":4096:2:16:8") == (std::size_t{8} << 20) + 128 * 1024);
  CHECK(parse_cublas_workspace_config(":0:0") == std::size_t{0});
}

TEST_CASE("a malformed CUBLAS_WORKSPACE_CONFIG is refused and the default applies",
          "[cuda_host][cublas]") {
  for (const char* bad : {"", "4096:8", ":4096", ":4096:", ":40x6:8", ":4096:8:16"}) {
    INFO(bad);
    CHECK_FALSE(parse_cublas_workspace_config(bad).has_value());
    CHECK(cublas_workspace_bytes(9, bad) == std::size_t{32} << 20);
  }
}

TEST_CASE("the default workspace is 32 MiB from Hopper on and 8 MiB plus 128 KiB before",
          "[cuda_host][cublas]") {
  CHECK(cublas_workspace_bytes(9, nullptr) == std::size_t{32} << 20);
  CHECK(cublas_workspace_bytes(10, nullptr) == std::size_t{32} << 20);
  CHECK(cublas_workspace_bytes(8, nullptr) == (std::size_t{8} << 20) + 128 * 1024);
  CHECK(cublas_workspace_bytes(8, ":1024:1") == std::size_t{1} << 20);
}
