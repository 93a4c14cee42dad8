#include "optim/record_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "optim/checkpoint_error.h"

namespace ruccl::optim {
namespace {

constexpr std::array<char, 8> kMagic = {'R', 'U', 'C', 'C', 'L', 'R', 'E', 'C'};

void put_u32(char* out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFFu);
}
void put_u64(char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFFu);
}
std::uint32_t get_u32(const char* in) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}
std::uint64_t get_u64(const char* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& reason) {
  throw CheckpointError(str("checkpoint ", path, ": ", reason));
}

std::string errno_text() { return std::strerror(errno); }

/// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
bool write_all(int fd, const char* bytes, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, bytes, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

void fsync_directory(const std::filesystem::path& dir, const std::filesystem::path& path) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open its directory to fsync it: " + errno_text());
  const int rc = ::fsync(fd);
  const std::string err = errno_text();
  ::close(fd);
  if (rc != 0) fail(path, "fsync of its directory failed: " + err);
}

}  // namespace

std::uint32_t crc32_of(std::string_view bytes) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* data = reinterpret_cast<const Bytef*>(bytes.data());
  std::size_t left = bytes.size();
  while (left > 0) {  // zlib takes uInt lengths: feed it in chunks below 4 GiB
    const uInt chunk = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    crc = ::crc32(crc, data, chunk);
    data += chunk;
    left -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

void write_record_file(const std::filesystem::path& path, std::string_view payload) {
  std::array<char, kRecordHeaderSize> header{};
  std::memcpy(header.data(), kMagic.data(), kMagic.size());
  put_u32(header.data() + 8, kRecordFormatVersion);
  put_u32(header.data() + 12, 0);
  put_u64(header.data() + 16, payload.size());
  put_u32(header.data() + 24, crc32_of(payload));
  put_u32(header.data() + 28, crc32_of(std::string_view(header.data(), 28)));

  const std::filesystem::path dir = path.parent_path();
  // A unique temporary name in the target's directory, so rename() stays on one file system.
  std::random_device entropy;
  const std::filesystem::path tmp =
      path.string() + str(".tmp.", ::getpid(), ".", entropy(), entropy());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, str("cannot create temporary file ", tmp, ": ", errno_text()));
  const bool written =
      write_all(fd, header.data(), header.size()) && write_all(fd, payload.data(), payload.size());
  const std::string write_err = errno_text();
  const bool synced = written && ::fsync(fd) == 0;
  const std::string sync_err = errno_text();
  const bool closed = ::close(fd) == 0;
  if (!written || !synced || !closed) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    fail(path, !written ? "write failed: " + write_err
                        : (!synced ? "fsync failed: " + sync_err : "close failed"));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = errno_text();
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    fail(path, "rename of the temporary file failed: " + err);
  }
  fsync_directory(dir, path);
}

std::string read_record_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    fail(path,
         std::filesystem::exists(path, ec) ? "cannot be opened for reading" : "does not exist");
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path, "read error");
  if (bytes.size() < kRecordHeaderSize) {
    fail(path, str("truncated: expected a header of ", kRecordHeaderSize, " bytes, got a file of ",
                   bytes.size(), " bytes"));
  }
  const char* h = bytes.data();
  if (std::memcmp(h, kMagic.data(), kMagic.size()) != 0) {
    fail(path, "not a ruCCL checkpoint (bad magic bytes), or its first bytes are corrupted");
  }
  if (get_u32(h + 28) != crc32_of(std::string_view(h, 28))) {
    fail(path, "corrupted: header checksum mismatch");
  }
  const std::uint32_t version = get_u32(h + 8);
  if (version != kRecordFormatVersion) {
    fail(path,
         str("unsupported format version: expected ", kRecordFormatVersion, ", got ", version));
  }
  const std::uint64_t length = get_u64(h + 16);
  const std::uint64_t actual = bytes.size() - kRecordHeaderSize;
  if (actual < length) {
    fail(path, str("truncated: expected a payload of ", length, " bytes, got ", actual));
  }
  if (actual > length) {
    fail(path, str("corrupted: ", actual - length, " unexpected bytes after the payload of ",
                   length, " bytes"));
  }
  std::string payload = bytes.substr(kRecordHeaderSize);
  if (get_u32(h + 24) != crc32_of(payload)) fail(path, "corrupted: payload checksum mismatch");
  return payload;
}

}  // namespace ruccl::optim
