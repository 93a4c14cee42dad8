#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, initial and final XOR 0xFFFFFFFF): the
// checksum of every TCP frame header and payload (iSCSI, ext4, SCTP and gRPC use the same one).
// Chosen over zlib's CRC-32 because x86 computes it in hardware (SSE4.2 `crc32`): three
// interleaved streams run at several GB/s per core, so checking every payload byte costs little
// next to the socket copy. Where SSE4.2 is missing, a portable slicing-by-8 table version runs.
//
//   std::uint32_t c = crc32c(header, 60);                 // one shot
//   std::uint32_t d = crc32c(b, nb, crc32c(a, na));       // == crc32c of a then b (incremental)
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ruccl {

/// The CRC-32C of `n` bytes at `data`, continuing from `crc` (the CRC-32C of the bytes before
/// them; 0 for none). Uses the SSE4.2 instruction when the CPU has it, else crc32c_portable.
std::uint32_t crc32c(const void* data, std::size_t n, std::uint32_t crc = 0);

/// The same value computed with tables only (slicing-by-8): the fallback, and the reference the
/// hardware path is tested against.
std::uint32_t crc32c_portable(const void* data, std::size_t n, std::uint32_t crc = 0);

/// Whether this CPU runs the hardware path (x86-64 with SSE4.2).
bool crc32c_hardware_available();

/// The hardware path itself, three interleaved streams. Precondition: crc32c_hardware_available().
std::uint32_t crc32c_hardware(const void* data, std::size_t n, std::uint32_t crc = 0);

/// Which path crc32c takes on this CPU: "sse4.2, 3 streams" or "portable slicing-by-8".
std::string_view crc32c_implementation();

}  // namespace ruccl
