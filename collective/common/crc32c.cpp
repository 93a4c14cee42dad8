#include "collective/common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)  // the 64-bit crc32 form; 32-bit x86 takes the portable path
#include <nmmintrin.h>
#define RUCCL_CRC32C_X86 1
#else
#define RUCCL_CRC32C_X86 0
#endif

namespace ruccl {

namespace {

// Both paths work on the raw register (the CRC before its final XOR): crc32c() inverts on entry
// and on exit, so that a returned value continues a later call.
constexpr std::uint32_t kPolynomial = 0x82F63B78;  // reflected Castagnoli polynomial

using Table = std::array<std::uint32_t, 256>;

// kSlices[0] advances the register over one byte; kSlices[k][v] is the register after byte v
// followed by k zero bytes, so eight lookups advance it over eight bytes (slicing-by-8).
constexpr std::array<Table, 8> make_slices() {
  std::array<Table, 8> t{};
  for (std::uint32_t v = 0; v < 256; ++v) {
    std::uint32_t r = v;
    for (int bit = 0; bit < 8; ++bit) r = (r >> 1) ^ ((r & 1) ? kPolynomial : 0);
    t[0][v] = r;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t v = 0; v < 256; ++v) t[k][v] = (t[k - 1][v] >> 8) ^ t[0][t[k - 1][v] & 0xFF];
  }
  return t;
}
constexpr std::array<Table, 8> kSlices = make_slices();

std::uint32_t load_le32(const unsigned char* p) {
  return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
         std::uint32_t{p[3]} << 24;
}

std::uint32_t portable_raw(std::uint32_t r, const unsigned char* p, std::size_t n) {
  for (; n >= 8; n -= 8, p += 8) {
    const std::uint32_t lo = load_le32(p) ^ r;
    const std::uint32_t hi = load_le32(p + 4);
    r = kSlices[7][lo & 0xFF] ^ kSlices[6][(lo >> 8) & 0xFF] ^ kSlices[5][(lo >> 16) & 0xFF] ^
        kSlices[4][lo >> 24] ^ kSlices[3][hi & 0xFF] ^ kSlices[2][(hi >> 8) & 0xFF] ^
        kSlices[1][(hi >> 16) & 0xFF] ^ kSlices[0][hi >> 24];
  }
  for (; n > 0; --n, ++p) r = kSlices[0][(r ^ *p) & 0xFF] ^ (r >> 8);
  return r;
}

#if RUCCL_CRC32C_X86

// Three streams: the `crc32` instruction has a latency of 3 cycles and a throughput of 1 per
// cycle, so one stream runs at a third of the speed the unit allows. A block of 3 x kLong bytes
// is split into three runs computed side by side, the first from the running register, the
// other two from zero; CRC is linear over GF(2), so
//   register(s, A B) = shift_|B|(register(s, A)) ^ register(0, B),
// where shift_n(r) is the register after n zero bytes from r. shift_n is a 32 x 32 bit matrix,
// applied as four byte-indexed tables (Intel's "Fast CRC Computation for iSCSI Polynomial Using
// CRC32 Instruction"; Mark Adler's crc32c.c). kLong amortises the 4 lookups of the combine;
// kShort serves buffers of 768 bytes .. 24 KiB.
constexpr std::size_t kLong = 8192;
constexpr std::size_t kShort = 256;

// The matrix of shift_n as its columns: column i is shift_n(1 << i).
using Matrix = std::array<std::uint32_t, 32>;

constexpr std::uint32_t apply(const Matrix& m, std::uint32_t v) {
  std::uint32_t out = 0;
  for (int i = 0; v != 0; ++i, v >>= 1) {
    if (v & 1) out ^= m[static_cast<std::size_t>(i)];
  }
  return out;
}

// shift_n for n a power of two, by squaring shift_1 (one zero byte) log2(n) times.
constexpr Matrix shift_matrix(std::size_t n) {
  Matrix m{};
  for (std::size_t i = 0; i < 32; ++i) {
    const std::uint32_t r = std::uint32_t{1} << i;
    m[i] = kSlices[0][r & 0xFF] ^ (r >> 8);
  }
  for (std::size_t have = 1; have < n; have *= 2) {
    Matrix sq{};
    for (std::size_t i = 0; i < 32; ++i) sq[i] = apply(m, m[i]);
    m = sq;
  }
  return m;
}

constexpr std::array<Table, 4> shift_tables(std::size_t n) {
  const Matrix m = shift_matrix(n);
  std::array<Table, 4> t{};
  for (std::uint32_t k = 0; k < 4; ++k) {
    for (std::uint32_t v = 0; v < 256; ++v) t[k][v] = apply(m, v << (8 * k));
  }
  return t;
}
constexpr std::array<Table, 4> kShiftLong = shift_tables(kLong);
constexpr std::array<Table, 4> kShiftShort = shift_tables(kShort);

std::uint32_t shift(const std::array<Table, 4>& t, std::uint32_t r) {
  return t[0][r & 0xFF] ^ t[1][(r >> 8) & 0xFF] ^ t[2][(r >> 16) & 0xFF] ^ t[3][r >> 24];
}

inline std::uint64_t load_u64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);  // one unaligned load; x86 is little-endian, as the CRC wants
  return v;
}

// Runs three streams over blocks of 3 x `len` bytes while they last.
__attribute__((target("sse4.2"))) inline std::uint64_t three_streams(
    std::uint64_t r, const unsigned char*& p, std::size_t& n, std::size_t len,
    const std::array<Table, 4>& shift_len) {
  while (n >= 3 * len) {
    std::uint64_t r1 = 0, r2 = 0;
    const unsigned char* const end = p + len;
    do {
      r = _mm_crc32_u64(r, load_u64(p));
      r1 = _mm_crc32_u64(r1, load_u64(p + len));
      r2 = _mm_crc32_u64(r2, load_u64(p + 2 * len));
      p += 8;
    } while (p < end);
    r = shift(shift_len, static_cast<std::uint32_t>(r)) ^ r1;
    r = shift(shift_len, static_cast<std::uint32_t>(r)) ^ r2;
    p += 2 * len;
    n -= 3 * len;
  }
  return r;
}

__attribute__((target("sse4.2"))) std::uint32_t hardware_raw(std::uint32_t r32,
                                                             const unsigned char* p,
                                                             std::size_t n) {
  // Align to 8 bytes first, so the 8-byte loads of the streams never split a cache line.
  while (n > 0 && (reinterpret_cast<std::uintptr_t>(p) & 7) != 0) {
    r32 = _mm_crc32_u8(r32, *p++);
    --n;
  }
  std::uint64_t r = r32;
  r = three_streams(r, p, n, kLong, kShiftLong);
  r = three_streams(r, p, n, kShort, kShiftShort);
  for (; n >= 8; n -= 8, p += 8) r = _mm_crc32_u64(r, load_u64(p));
  r32 = static_cast<std::uint32_t>(r);
  for (; n > 0; --n) r32 = _mm_crc32_u8(r32, *p++);
  return r32;
}

#endif  // RUCCL_CRC32C_X86

}  // namespace

std::uint32_t crc32c_portable(const void* data, std::size_t n, std::uint32_t crc) {
  return ~portable_raw(~crc, static_cast<const unsigned char*>(data), n);
}

bool crc32c_hardware_available() {
#if RUCCL_CRC32C_X86
  static const bool available = [] {
    __builtin_cpu_init();  // harmless when already run; needed if called before constructors
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return available;
#else
  return false;
#endif
}

std::uint32_t crc32c_hardware(const void* data, std::size_t n, std::uint32_t crc) {
#if RUCCL_CRC32C_X86
  return ~hardware_raw(~crc, static_cast<const unsigned char*>(data), n);
#else
  return crc32c_portable(data, n, crc);  // unreachable by the precondition; still correct
#endif
}

std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc) {
  return crc32c_hardware_available() ? crc32c_hardware(data, n, crc)
                                     : crc32c_portable(data, n, crc);
}

std::string_view crc32c_implementation() {
  return crc32c_hardware_available() ? "sse4.2, 3 streams" : "portable slicing-by-8";
}

}  // namespace ruccl
