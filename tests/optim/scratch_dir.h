#pragma once
// A fresh temporary directory per test, removed afterwards.
#include <atomic>
#include <filesystem>
#include <random>
#include <string>

namespace ruccl::optim::test_support {

/// Creates a unique directory under the system temp dir; removes it (recursively) on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    std::random_device entropy;
    path_ = std::filesystem::temp_directory_path() /
            ("ruccl_optim_test_" + std::to_string(entropy()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace ruccl::optim::test_support
