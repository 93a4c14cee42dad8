#pragma once
// InMemoryStore: the Store for ranks that are threads of one process (and for tests).
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "collective/store/store.h"

namespace ruccl {

/// A map behind a mutex; waiters sleep on a condition variable until a key arrives or their
/// deadline passes. Share one instance between the threads of a job.
class InMemoryStore final : public Store {
 public:
  InMemoryStore() = default;
  std::string describe() const override { return "InMemoryStore"; }

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
  // Waits until every key exists or the deadline passes; returns the keys still missing.
  std::vector<std::string> wait_locked(std::unique_lock<std::mutex>& lock,
                                       std::span<const std::string> keys, const Deadline& deadline);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, StoreValue, std::less<>> values_;
};

}  // namespace ruccl
