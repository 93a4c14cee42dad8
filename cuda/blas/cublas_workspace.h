#pragma once
// The size of the workspace each (cuBLAS handle, stream) pair gets (cublas_handle.cpp). As in
// PyTorch, CUBLAS_WORKSPACE_CONFIG=":SIZE_KiB:COUNT[:SIZE_KiB:COUNT...]" sets it (the sum of
// SIZE_KiB * COUNT KiB: ":4096:8" is 32 MiB); otherwise 32 MiB on compute capability 9.0 and
// later (Hopper's GEMM kernels use more), else ":4096:2:16:8" (8 MiB + 128 KiB). Host-only.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ruccl::cuda {

/// The bytes CUBLAS_WORKSPACE_CONFIG asks for, or nullopt when `config` is not of that form.
inline std::optional<std::size_t> parse_cublas_workspace_config(std::string_view config) {
  std::size_t total = 0;
  std::size_t pos = 0;
  int fields = 0;
  std::uint64_t pair[2] = {0, 0};
  while (pos < config.size()) {
    if (config[pos] != ':') return std::nullopt;
    ++pos;
    std::uint64_t v = 0;
    const std::size_t start = pos;
    while (pos < config.size() && config[pos] >= '0' && config[pos] <= '9') {
      v = v * 10 + static_cast<std::uint64_t>(config[pos] - '0');
      if (v > (std::uint64_t{1} << 32)) return std::nullopt;
      ++pos;
    }
    if (pos == start) return std::nullopt;
    pair[fields % 2] = v;
    if (++fields % 2 == 0) total += static_cast<std::size_t>(pair[0] * pair[1] * 1024);
  }
  if (fields == 0 || fields % 2 != 0) return std::nullopt;
  return total;
}

/// The workspace bytes for a device of compute capability `major` given the environment's
/// CUBLAS_WORKSPACE_CONFIG (`config`, nullptr when unset; an unparsable value falls back).
inline std::size_t cublas_workspace_bytes(int major, const char* config) {
  if (config != nullptr) {
    if (const auto bytes = parse_cublas_workspace_config(config)) return *bytes;
  }
  return major >= 9 ? std::size_t{4096} * 8 * 1024 : (std::size_t{4096} * 2 + 16 * 8) * 1024;
}

}  // namespace ruccl::cuda
