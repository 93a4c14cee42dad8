#pragma once
// SecretFile: a job secret (64 random hex digits) in a temporary file of a given mode, for the
// ruccl-run tests (--secret-file). Removed with its folder on destruction.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace ruccl::testing {

class SecretFile {
 public:
  explicit SecretFile(mode_t mode) {
    char folder[] = "/tmp/ruccl-secret-test-XXXXXX";
    if (::mkdtemp(folder) == nullptr) throw std::runtime_error("mkdtemp failed");
    folder_ = folder;
    path_ = folder_ + "/secret";
    std::ifstream random("/dev/urandom", std::ios::binary);
    static constexpr char kDigits[] = "0123456789abcdef";
    for (int i = 0; i < 32; ++i) {
      const int byte = random.get();
      hex_.push_back(kDigits[(byte >> 4) & 15]);
      hex_.push_back(kDigits[byte & 15]);
    }
    std::ofstream(path_) << hex_ << "\n";
    ::chmod(path_.c_str(), mode);
  }
  ~SecretFile() {
    std::remove(path_.c_str());
    ::rmdir(folder_.c_str());
  }
  SecretFile(const SecretFile&) = delete;
  SecretFile& operator=(const SecretFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& folder() const { return folder_; }
  /// The secret as written (lower-case hex).
  const std::string& hex() const { return hex_; }

 private:
  std::string folder_, path_, hex_;
};

}  // namespace ruccl::testing
