#include "collective/store/file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "collective/common/collective_error.h"
#include "collective/common/hash.h"
#include "collective/net/socket_detail.h"

namespace ruccl {

namespace {

using net::detail::errno_text;
using namespace std::chrono_literals;

constexpr char kMagic[4] = {'R', 'C', 'F', 'S'};
constexpr std::size_t kFixedBytes = 4 + 4 + 8;
constexpr std::size_t kMaxFileBytes = kFixedBytes + kMaxStoreKeyBytes + kMaxStoreValueBytes;
constexpr std::string_view kSessionPrefix = "ruccl FileStore session ";

CollectiveError io_error(const std::filesystem::path& path, const char* doing, int err) {
  return CollectiveError(
      CollectiveErrorKind::InvalidConfig,
      str("FileStore: cannot ", doing, " ", path.string(), ": ", errno_text(err)));
}

// Reads the whole file (at most `cap` bytes); nullopt when it does not exist.
std::optional<std::string> read_file(const std::filesystem::path& path, std::size_t cap) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw io_error(path, "open", errno);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw io_error(path, "stat", err);
  }
  if (static_cast<std::uint64_t>(st.st_size) > cap) {
    ::close(fd);
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("FileStore: ", path.string(), " has ", st.st_size,
                              " bytes, over the cap of ", cap, " (not a store file)"));
  }
  std::string data(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw io_error(path, "read", err);
    }
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return data;
}

// Writes `data` to `path` atomically: a temporary file beside it, fsync, rename.
void write_file_atomically(const std::filesystem::path& path, const std::filesystem::path& temp,
                           std::span<const std::uint8_t> head, std::span<const std::uint8_t> body) {
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw io_error(temp, "create", errno);
  for (const auto part : {head, body}) {
    std::size_t done = 0;
    while (done < part.size()) {
      const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        ::unlink(temp.c_str());
        throw io_error(temp, "write", err);
      }
      done += static_cast<std::size_t>(n);
    }
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw io_error(temp, "fsync", err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw io_error(path, "rename onto", err);
  }
}

void put_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
std::uint64_t get_le(const std::string& b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t{static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)])} << (8 * i);
  return v;
}

}  // namespace

// Excludes other threads (mutex_) and other processes (flock on lock_fd_) for one change.
class FileStore::Lock {
 public:
  explicit Lock(FileStore& s) : store_(s), guard_(s.mutex_) {
    const Deadline deadline = Deadline::after(s.lock_timeout_, "FileStore lock");
    auto pause = 1ms;
    while (::flock(s.lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) throw io_error(s.dir_ / "lock", "lock", errno);
      if (deadline.expired())
        throw CollectiveError(
            CollectiveErrorKind::Timeout,
            str(s.describe(), ": could not lock ", (s.dir_ / "lock").string(), " within ",
                s.lock_timeout_.count(), " ms (another process holds it)"));
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(20));
    }
  }
  ~Lock() { ::flock(store_.lock_fd_, LOCK_UN); }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  FileStore& store_;
  std::lock_guard<std::mutex> guard_;
};

FileStore::FileStore(std::filesystem::path directory, const SessionId& session,
                     std::chrono::milliseconds lock_timeout)
    : dir_(std::move(directory)), lock_timeout_(lock_timeout) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec)
    throw CollectiveError(
        CollectiveErrorKind::InvalidConfig,
        str("FileStore: cannot create the folder ", dir_.string(), ": ", ec.message()));
  const std::filesystem::path lock_path = dir_ / "lock";
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) throw io_error(lock_path, "open", errno);
  try {
    check_session(session);
  } catch (...) {
    ::close(lock_fd_);
    throw;
  }
}

FileStore::~FileStore() { ::close(lock_fd_); }

void FileStore::check_session(const SessionId& session) {
  Lock lock(*this);
  const std::filesystem::path path = dir_ / "session";
  const std::string mine = session_id_to_hex(session);
  if (const auto text = read_file(path, 256)) {
    std::string_view t = *text;
    if (!t.starts_with(kSessionPrefix) || !t.ends_with('\n'))
      throw CollectiveError(
          CollectiveErrorKind::InvalidConfig,
          str(describe(), ": ", path.string(), " is not a ruccl FileStore session file (expected '",
              kSessionPrefix, "<32 hex digits>')"));
    t.remove_prefix(kSessionPrefix.size());
    t.remove_suffix(1);
    const std::string theirs = session_id_to_hex(parse_session_id(t, path.string()));
    if (theirs != mine)
      throw CollectiveError(
          CollectiveErrorKind::InvalidConfig,
          str(describe(), " belongs to session ", theirs, ", not to this job's session ", mine,
              " (use a fresh folder for each job)"));
    return;
  }
  const std::string text = str(kSessionPrefix, mine, "\n");
  write_file_atomically(path, dir_ / str("tmp.session.", ::getpid()),
                        {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}, {});
}

std::filesystem::path FileStore::key_path(std::string_view key) const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string name = "k.";
  for (const char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-') {
      name.push_back(static_cast<char>(c));
    } else {
      name.push_back('%');
      name.push_back(kHex[c >> 4]);
      name.push_back(kHex[c & 15]);
    }
  }
  if (name.size() > 150) {
    name.resize(100);
    while (name.back() == '%' || name[name.size() - 2] == '%') name.pop_back();  // whole escapes
    name += str("~", std::hex, fnv1a64(key));
  }
  return dir_ / name;
}

std::optional<StoreValue> FileStore::read_key(std::string_view key) const {
  const std::filesystem::path path = key_path(key);
  const auto data = read_file(path, kMaxFileBytes);
  if (!data) return std::nullopt;
  const auto corrupt = [&](const char* why) {
    return CollectiveError(CollectiveErrorKind::InvalidConfig,
                           str(describe(), ": ", path.string(), " is not a store file: ", why));
  };
  if (data->size() < kFixedBytes || data->compare(0, 4, kMagic, 4) != 0)
    throw corrupt("bad magic or too short");
  const std::uint64_t key_bytes = get_le(*data, 4, 4);
  if (key_bytes > kMaxStoreKeyBytes || data->size() < kFixedBytes + key_bytes)
    throw corrupt("bad key length");
  const std::uint64_t value_bytes = get_le(*data, 8 + key_bytes, 8);
  if (data->size() != kFixedBytes + key_bytes + value_bytes) throw corrupt("bad value length");
  if (std::string_view(*data).substr(8, key_bytes) != key)
    throw CollectiveError(
        CollectiveErrorKind::InvalidArgument,
        str(describe(), ": the file name ", path.filename().string(), " of key '",
            key.substr(0, 64), "' is taken by another key (a hash collision of two long keys)"));
  const auto* v = reinterpret_cast<const std::uint8_t*>(data->data()) + kFixedBytes + key_bytes;
  return StoreValue(v, v + value_bytes);
}

void FileStore::write_key(std::string_view key, std::span<const std::uint8_t> value) {
  std::vector<std::uint8_t> head(kMagic, kMagic + 4);
  put_le(head, key.size(), 4);
  head.insert(head.end(), key.begin(), key.end());
  put_le(head, value.size(), 8);
  const std::filesystem::path temp =
      dir_ / str("tmp.", ::getpid(), ".", std::this_thread::get_id(), ".", temp_counter_++);
  write_file_atomically(key_path(key), temp, head, value);
}

void FileStore::do_set(std::string_view key, std::span<const std::uint8_t> value) {
  Lock lock(*this);
  write_key(key, value);
}

std::vector<std::string> FileStore::wait_keys(std::span<const std::string> keys,
                                              const Deadline& deadline) {
  std::vector<std::string> missing(keys.begin(), keys.end());
  auto pause = 1ms;
  for (;;) {
    std::erase_if(missing,
                  [&](const std::string& k) { return ::access(key_path(k).c_str(), F_OK) == 0; });
    if (missing.empty() || deadline.expired()) return missing;
    const auto left = deadline.at() - Deadline::Clock::now();
    std::this_thread::sleep_for(std::min<Deadline::Clock::duration>(pause, left));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

StoreValue FileStore::do_get(std::string_view key, const Deadline& deadline) {
  for (;;) {
    const std::string k(key);
    const std::vector<std::string> missing = wait_keys(std::span(&k, 1), deadline);
    if (!missing.empty()) store_detail::throw_keys_timeout(describe(), "get", missing, deadline);
    if (auto v = read_key(key)) return std::move(*v);
    // Removed between the wait and the read: wait again.
  }
}

void FileStore::do_wait(std::span<const std::string> keys, const Deadline& deadline) {
  const std::vector<std::string> missing = wait_keys(keys, deadline);
  if (!missing.empty()) store_detail::throw_keys_timeout(describe(), "wait", missing, deadline);
}

std::int64_t FileStore::do_add(std::string_view key, std::int64_t delta) {
  Lock lock(*this);
  const std::optional<StoreValue> current = read_key(key);
  const std::int64_t sum = store_detail::add_to_text(
      describe(), key,
      current ? std::span<const std::uint8_t>(*current) : std::span<const std::uint8_t>(), delta);
  const std::string text = std::to_string(sum);
  write_key(key, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  return sum;
}

StoreValue FileStore::do_compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                                     std::span<const std::uint8_t> desired) {
  Lock lock(*this);
  const std::optional<StoreValue> current = read_key(key);
  if (!current) {
    if (!expected.empty()) return StoreValue(expected.begin(), expected.end());
  } else if (!std::equal(current->begin(), current->end(), expected.begin(), expected.end())) {
    return *current;
  }
  write_key(key, desired);
  return StoreValue(desired.begin(), desired.end());
}

bool FileStore::do_remove(std::string_view key) {
  Lock lock(*this);
  const std::filesystem::path path = key_path(key);
  if (::unlink(path.c_str()) == 0) return true;
  if (errno == ENOENT) return false;
  throw io_error(path, "remove", errno);
}

bool FileStore::do_check(std::span<const std::string> keys) {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
    return ::access(key_path(k).c_str(), F_OK) == 0;
  });
}

}  // namespace ruccl
