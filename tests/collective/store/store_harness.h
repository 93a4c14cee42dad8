#pragma once
// One store of each kind for the store tests: the same behaviour table runs over all three.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "collective/store/file_store.h"
#include "collective/store/in_memory_store.h"
#include "collective/store/tcp_store.h"
#include "collective/store/tcp_store_server.h"

extern char** environ;

namespace ruccl::testing {

enum class StoreKind { InMemory, File, Tcp };

inline const char* store_kind_name(StoreKind k) {
  switch (k) {
    case StoreKind::InMemory:
      return "InMemoryStore";
    case StoreKind::File:
      return "FileStore";
    case StoreKind::Tcp:
      return "TcpStore";
  }
  return "?";
}

/// A fresh folder under the temporary directory, removed with everything in it.
class TemporaryFolder {
 public:
  TemporaryFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ruccl-store-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TemporaryFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// A store of `kind` for one job (one session), and more clients of the same store.
class StoreUnderTest {
 public:
  explicit StoreUnderTest(StoreKind kind) : kind_(kind), session_(random_session_id()) {
    if (kind == StoreKind::Tcp)
      server_ = std::make_unique<TcpStoreServer>("127.0.0.1", 0, session_);
    main_ = connect();
  }
  StoreKind kind() const { return kind_; }
  const SessionId& session() const { return session_; }
  Store& store() { return kind_ == StoreKind::InMemory ? memory_ : *main_; }
  /// Another client of the same store (InMemoryStore: the same object, there is only one).
  std::unique_ptr<Store> connect() {
    switch (kind_) {
      case StoreKind::InMemory:
        return nullptr;
      case StoreKind::File:
        return std::make_unique<FileStore>(folder_.path(), session_);
      case StoreKind::Tcp:
        return std::make_unique<TcpStore>(server_->endpoint(), session_,
                                          Deadline::after(std::chrono::seconds(10)));
    }
    return nullptr;
  }
  /// Store `client` or the in-memory store.
  Store& of(const std::unique_ptr<Store>& client) { return client ? *client : store(); }
  TcpStoreServer& server() { return *server_; }
  const std::filesystem::path& folder() const { return folder_.path(); }
  /// Where a helper process finds this store ("file DIR" / "tcp HOST:PORT").
  std::vector<std::string> helper_args() const {
    if (kind_ == StoreKind::File) return {"file", folder_.path().string()};
    return {"tcp", server_->endpoint().to_string()};
  }
  /// Stops the TCP server (clients then see PeerLost).
  void stop_server() { server_.reset(); }

 private:
  StoreKind kind_;
  SessionId session_;
  TemporaryFolder folder_;
  InMemoryStore memory_;
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<Store> main_;
};

/// Starts `program args...`; returns its pid.
inline pid_t spawn(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  return pid;
}

/// Waits for `pid`; its exit status (-1 when it did not exit normally).
inline int wait_exit(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace ruccl::testing
