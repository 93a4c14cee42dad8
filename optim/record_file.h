#pragma once
// The on-disk frame of a checkpoint: a fixed 32-byte header, then the payload (a cereal archive).
//
//   offset  size  field
//        0     8  magic "RUCCLREC"
//        8     4  format version (little endian)
//       12     4  reserved, 0
//       16     8  payload length in bytes (little endian)
//       24     4  CRC-32 (zlib) of the payload
//       28     4  CRC-32 of bytes 0..27 (so a flipped length or version is caught as damage)
//
// CRC-32 detects every single-bit flip and every burst up to 32 bits, so a damaged file is refused
// rather than misread. Writes are atomic: a temporary file in the same directory is written,
// fsync'ed, renamed over the target, and the directory is fsync'ed.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ruccl::optim {

/// Current format version of the frame and of the TrainingRecord payload inside it.
inline constexpr std::uint32_t kRecordFormatVersion = 1;
/// Size of the frame header in bytes.
inline constexpr std::size_t kRecordHeaderSize = 32;

/// Writes `payload` framed (header + checksum) to `path` atomically. Throws CheckpointError naming
/// the file when any step fails; the target is then untouched.
void write_record_file(const std::filesystem::path& path, std::string_view payload);

/// Reads and verifies a framed file; returns its payload. Throws CheckpointError naming the file
/// and the reason: missing, unreadable, truncated, trailing bytes, not a checkpoint (magic),
/// another format version, or a checksum mismatch.
std::string read_record_file(const std::filesystem::path& path);

/// The zlib CRC-32 of `bytes`.
std::uint32_t crc32_of(std::string_view bytes);

}  // namespace ruccl::optim
