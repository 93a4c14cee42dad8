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
// rather than misread.
//
// Writing is atomic: the frame goes to a temporary file with a short name of its own
// (".ruccl-tmp-" and 16 hex digits, so a target name of NAME_MAX bytes still works) in the
// target's directory (so rename() stays on one file system), is fsync'ed, renamed over the
// target, and the directory is fsync'ed. Every failure before the rename removes the temporary
// file; a process killed mid-write can leave one behind, which is safe to delete. A symbolic link
// at the target is replaced by the new file, not followed (rename's rule).
//
// Reading trusts nothing but the bytes: the file is opened without blocking (O_NONBLOCK, so a
// FIFO without a writer cannot stall the load), and the descriptor, not the path, is checked to
// be a regular file (a directory, FIFO, socket or device such as /dev/zero or /dev/urandom is
// refused before a byte is read). Symbolic links are followed (a "latest.ckpt" link is a common
// layout, and what they point to is checked like any other file). The file's size must be
// exactly header + declared payload length, and at most that plus one byte (to see a file that
// grew meanwhile) is ever read, so memory is bounded by the file's real size.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ruccl::optim {

/// Current format version of the frame and of the TrainingRecord payload inside it. 2: the
/// record holds the module generators (Module::named_generators); 3: and the caller's named
/// values (CallerState::set); 4: and the accumulation window's weight (AccumulatorState::weight).
inline constexpr std::uint32_t kRecordFormatVersion = 4;
/// Size of the frame header in bytes.
inline constexpr std::size_t kRecordHeaderSize = 32;
/// The prefix of the temporary files write_record_file creates beside the target.
inline constexpr std::string_view kRecordTemporaryPrefix = ".ruccl-tmp-";

/// Writes `payload` framed (header + checksum) to `path` atomically. Throws CheckpointError naming
/// the file when any step fails; the target is then untouched and no temporary file is left
/// (except when only the final fsync of the directory fails: the new file is then in place, but
/// its rename may not survive a power loss).
void write_record_file(const std::filesystem::path& path, std::string_view payload);

/// Reads and verifies a framed file; returns its payload. Never blocks and never reads more than
/// the header, the payload it declares and one byte. Throws CheckpointError naming the file and
/// the reason: missing, not a regular file, unreadable, truncated, trailing bytes, changed while
/// read, not a checkpoint (magic), another format version, a checksum mismatch, or a payload too
/// large for memory.
std::string read_record_file(const std::filesystem::path& path);

/// The zlib CRC-32 of `bytes`.
std::uint32_t crc32_of(std::string_view bytes);

}  // namespace ruccl::optim
