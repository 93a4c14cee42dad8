#include "optim/checkpoint/record_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "optim/checkpoint/checkpoint_error.h"

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

/// Reads up to `size` bytes into `out`, retrying short reads and EINTR; returns how many were
/// read (fewer only at the end of the file). CheckpointError on a read error.
std::size_t read_up_to(int fd, char* out, std::size_t size, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, out + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, "read error: " + errno_text());
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

/// Closes a descriptor when it goes out of scope.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

/// What a non-regular file is, for the refusal message.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

/// A temporary file beside the target, created exclusively under a short name; removed on
/// destruction unless kept (after the rename).
class TemporaryFile {
 public:
  TemporaryFile(const std::filesystem::path& dir, const std::filesystem::path& target) {
    std::random_device entropy;
    int err = 0;
    for (int attempt = 0; attempt < 100; ++attempt) {  // a clash is ~2^-64 likely: 100 is plenty
      const std::uint64_t word = (std::uint64_t{entropy()} << 32) | entropy();
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(word));
      path_ = dir / (std::string(kRecordTemporaryPrefix) + hex);
      // O_EXCL: never reuse a name (nor follow a link planted there); 0644 honours the umask.
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ >= 0) return;
      err = errno;
      if (err != EEXIST) break;
    }
    fail(target, str("cannot create a temporary file in ", dir.empty() ? "." : dir.string(), ": ",
                     std::strerror(err)));
  }
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!kept_) ::unlink(path_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }
  /// Closes the descriptor; false (errno set) when close() reports an error.
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }
  /// The file was renamed to the target: nothing to remove any more.
  void keep() { kept_ = true; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool kept_ = false;
};

void fsync_directory(const std::filesystem::path& dir, const std::filesystem::path& path) {
  Descriptor fd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) fail(path, "cannot open its directory to fsync it: " + errno_text());
  if (::fsync(fd.get()) != 0) fail(path, "fsync of its directory failed: " + errno_text());
}

/// The checks of read_record_file, on an open descriptor of a regular file of `file_size` bytes.
std::string read_frame(int fd, std::uint64_t file_size, const std::filesystem::path& path) {
  std::array<char, kRecordHeaderSize> header{};
  const std::size_t got = read_up_to(fd, header.data(), header.size(), path);
  if (got < kRecordHeaderSize) {
    fail(path, str("truncated: expected a header of ", kRecordHeaderSize, " bytes, got a file of ",
                   got, " bytes"));
  }
  const char* h = header.data();
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
  // The size fstat reported must be exactly header + payload: nothing is read on a length's word.
  const std::uint64_t actual = file_size >= kRecordHeaderSize ? file_size - kRecordHeaderSize : 0;
  if (actual < length) {
    fail(path, str("truncated: expected a payload of ", length, " bytes, got ", actual));
  }
  if (actual > length) {
    fail(path, str("corrupted: ", actual - length, " unexpected bytes after the payload of ",
                   length, " bytes"));
  }
  std::string payload;
  try {
    payload.resize(static_cast<std::size_t>(length));
  } catch (const std::exception& e) {  // bad_alloc, length_error
    fail(path, str("a payload of ", length, " bytes does not fit in memory (", e.what(), ")"));
  }
  const std::size_t read = read_up_to(fd, payload.data(), payload.size(), path);
  if (read < length) {
    fail(path, str("truncated: expected a payload of ", length, " bytes, got ", read,
                   " (the file shrank while it was read)"));
  }
  char extra = 0;
  if (read_up_to(fd, &extra, 1, path) != 0) {
    fail(path,
         str("changed while it was read: it grew beyond the ", file_size, " bytes its size said"));
  }
  if (get_u32(h + 24) != crc32_of(payload)) fail(path, "corrupted: payload checksum mismatch");
  return payload;
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

namespace {

void write_frame(const std::filesystem::path& path, std::string_view payload) {
  std::array<char, kRecordHeaderSize> header{};
  std::memcpy(header.data(), kMagic.data(), kMagic.size());
  put_u32(header.data() + 8, kRecordFormatVersion);
  put_u32(header.data() + 12, 0);
  put_u64(header.data() + 16, payload.size());
  put_u32(header.data() + 24, crc32_of(payload));
  put_u32(header.data() + 28, crc32_of(std::string_view(header.data(), 28)));

  const std::filesystem::path dir = path.parent_path();
  TemporaryFile tmp(dir, path);  // removed by its destructor on every failure below
  if (!write_all(tmp.fd(), header.data(), header.size()) ||
      !write_all(tmp.fd(), payload.data(), payload.size())) {
    fail(path, str("write of ", tmp.path(), " failed: ", errno_text()));
  }
  if (::fsync(tmp.fd()) != 0) fail(path, str("fsync of ", tmp.path(), " failed: ", errno_text()));
  if (!tmp.close()) fail(path, str("close of ", tmp.path(), " failed: ", errno_text()));
  if (::rename(tmp.path().c_str(), path.c_str()) != 0) {
    fail(path, str("rename of the temporary file ", tmp.path(), " failed: ", errno_text()));
  }
  tmp.keep();
  fsync_directory(dir, path);
}

}  // namespace

void write_record_file(const std::filesystem::path& path, std::string_view payload) {
  try {
    write_frame(path, payload);
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {  // std::random_device, memory: still names the file
    fail(path, str("cannot be written (", e.what(), ")"));
  }
}

std::string read_record_file(const std::filesystem::path& path) {
  try {
    // O_NONBLOCK: opening a FIFO without a writer returns at once (and is refused below);
    // regular files ignore the flag. O_NOCTTY: a terminal never becomes ours.
    Descriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
    if (fd.get() < 0) {
      if (errno == ENOENT) fail(path, "does not exist");
      fail(path, "cannot be opened for reading: " + errno_text());
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) fail(path, "cannot be examined (fstat): " + errno_text());
    if (!S_ISREG(st.st_mode)) {
      fail(path, str("is ", file_kind(st.st_mode), ", not a regular file"));
    }
    return read_frame(fd.get(), static_cast<std::uint64_t>(st.st_size), path);
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {  // anything else still names the file
    fail(path, str("cannot be read (", e.what(), ")"));
  }
}

}  // namespace ruccl::optim
