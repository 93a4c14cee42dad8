// CRC-32C throughput per core: the hardware path (SSE4.2, 3 streams) and the portable
// slicing-by-8 tables, over buffers from a frame header to a 1 MiB frame. Every TCP frame's
// payload passes through crc32c once on each side, so it must stay far above the socket's speed.
//
//   crc32c_bench [--seconds S]     (default 0.3 s per row)
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective/common/crc32c.h"

namespace {

using Clock = std::chrono::steady_clock;

// GB/s of `fn` over `bytes` bytes, repeated for about `seconds` (the buffer stays in cache
// from 64 B to 1 MiB: this measures the CRC, not memory).
template <typename Fn>
double gbps(Fn fn, const std::vector<std::uint8_t>& buf, std::size_t bytes, double seconds,
            std::uint32_t& sink) {
  std::size_t reps = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (std::size_t r = 0; r < reps; ++r) sink ^= fn(buf.data() + (r & 7), bytes, sink);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s >= seconds) return static_cast<double>(bytes) * static_cast<double>(reps) / s / 1e9;
    reps *= s > seconds / 20 ? 2 : 10;
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 0.3;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--seconds S]\n", argv[0]);
      return 2;
    }
  }
  std::vector<std::uint8_t> buf((std::size_t{1} << 20) + 8);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::uint8_t>(i * 131 + 7);
  std::uint32_t sink = 0;
  const bool hw = ruccl::crc32c_hardware_available();
  std::printf("CRC-32C, one core; crc32c() uses: %s\n\n",
              std::string(ruccl::crc32c_implementation()).c_str());
  std::printf("%10s %16s %16s %8s\n", "bytes", "hardware GB/s", "portable GB/s", "ratio");
  for (std::size_t bytes : {std::size_t{60}, std::size_t{1024}, std::size_t{4096},
                            std::size_t{65536}, std::size_t{256} << 10, std::size_t{1} << 20}) {
    const double sw = gbps(ruccl::crc32c_portable, buf, bytes, seconds, sink);
    if (hw) {
      const double h = gbps(ruccl::crc32c_hardware, buf, bytes, seconds, sink);
      std::printf("%10zu %16.2f %16.2f %7.1fx\n", bytes, h, sw, h / sw);
    } else {
      std::printf("%10zu %16s %16.2f %8s\n", bytes, "-", sw, "-");
    }
  }
  std::printf("\n(checksum of all runs: 0x%08X)\n", static_cast<unsigned>(sink));
  return 0;
}
