#pragma once
// FileStore: the Store over a folder every rank can see (a local folder for processes of one
// machine, NFS or another shared file system across machines). Like c10d's FileStore, for jobs
// without a reachable rank 0 port; slower than TcpStore (waits poll the folder).
//
// Layout of the folder:
//   session          "ruccl FileStore session <32 hex digits>\n": the job the folder belongs to
//   lock             flock()ed around every change (set, add, compare_set, remove), so a
//                    read-modify-write is atomic across processes and machines (Linux NFS maps
//                    flock to POSIX locks, which NFSv4 servers honour)
//   k.<encoded key>  one file per key: "RCFS", u32 key length, the key, u64 value length, the
//                    value (little-endian); written to a temporary file, fsync()ed, then
//                    rename()d over the old one, so a reader sees the old value or the new one,
//                    never a part
// Key names are encoded for any file system: 'a'-'z', '0'-'9', '_', '-' as they are, every other
// byte as %XX; a name longer than 150 characters is cut to 100 and suffixed with "~" and a 64-bit
// hash of the whole key (the key stored inside the file tells two such keys apart).
//
// A folder of another session is refused (InvalidConfig naming both): use a fresh folder per job.
// On NFS, a new key may take up to the client's attribute-cache time to be seen (mount with
// lookupcache=positive or a small actimeo for prompt rendezvous).
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "collective/store/store.h"

namespace ruccl {

class FileStore final : public Store {
 public:
  /// Opens (creating it if needed) the store in `directory` for `session`. `lock_timeout`
  /// bounds the wait for the folder's lock (a change is Timeout after it).
  FileStore(std::filesystem::path directory, const SessionId& session,
            std::chrono::milliseconds lock_timeout = std::chrono::seconds(60));
  ~FileStore() override;
  FileStore(const FileStore&) = delete;
  FileStore& operator=(const FileStore&) = delete;

  std::string describe() const override { return "FileStore " + dir_.string(); }
  /// The file that holds `key` (for tests and debugging).
  std::filesystem::path key_path(std::string_view key) const;

 protected:
  void do_set(std::string_view key, std::span<const std::uint8_t> value) override;
  StoreValue do_get(std::string_view key, const Deadline& deadline) override;
  void do_wait(std::span<const std::string> keys, const Deadline& deadline) override;
  std::int64_t do_add(std::string_view key, std::int64_t delta) override;
  StoreValue do_compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                            std::span<const std::uint8_t> desired) override;
  bool do_remove(std::string_view key) override;
  bool do_check(std::span<const std::string> keys) override;

 private:
  class Lock;
  std::optional<StoreValue> read_key(std::string_view key) const;
  void write_key(std::string_view key, std::span<const std::uint8_t> value);
  // Waits until every key exists; returns the keys still missing at the deadline.
  std::vector<std::string> wait_keys(std::span<const std::string> keys, const Deadline& deadline);
  void check_session(const SessionId& session);

  std::filesystem::path dir_;
  std::chrono::milliseconds lock_timeout_;
  int lock_fd_ = -1;
  std::mutex mutex_;  // flock does not exclude threads sharing lock_fd_
  std::atomic<std::uint64_t> temp_counter_{0};
};

}  // namespace ruccl
