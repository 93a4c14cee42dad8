#pragma once
// Where a benchmark finds its peer programs: bench/peers/ of this repository (compiled in by
// bench/CMakeLists.txt as RUCCL_BENCH_PEERS_DIR), unless the command line (--peers DIR) or the
// environment (RUCCL_PEERS_DIR) names another folder holding programs of the same names, e.g. a
// copy beside a build made elsewhere.
#include <cstdlib>
#include <string>

namespace ruccl::bench {

/// The OPENBLAS_CORETYPE the OpenBLAS-based peers run with: "SkylakeX" (its AVX-512 kernels) on a
/// CPU with AVX-512, since Debian 12's OpenBLAS 0.3.21 does not recognise recent AVX-512 CPUs and
/// would fall back to its SSE3 'Prescott' kernels; "default" (OpenBLAS's own detection) elsewhere,
/// where SkylakeX kernels would stop on an illegal instruction.
inline std::string openblas_core() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
#endif
  return "default";
}

/// `flag` if given, else $RUCCL_PEERS_DIR if set and not empty, else the repository's bench/peers.
inline std::string peers_dir(const std::string& flag = "") {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("RUCCL_PEERS_DIR"); env != nullptr && *env != '\0') return env;
  return RUCCL_BENCH_PEERS_DIR;
}

}  // namespace ruccl::bench
