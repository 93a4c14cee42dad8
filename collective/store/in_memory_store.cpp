#include "collective/store/in_memory_store.h"

#include <algorithm>

namespace ruccl {

void InMemoryStore::do_set(std::string_view key, std::span<const std::uint8_t> value) {
  {
    std::lock_guard lock(mutex_);
    values_.insert_or_assign(std::string(key), StoreValue(value.begin(), value.end()));
  }
  changed_.notify_all();
}

std::vector<std::string> InMemoryStore::wait_locked(std::unique_lock<std::mutex>& lock,
                                                    std::span<const std::string> keys,
                                                    const Deadline& deadline) {
  std::vector<std::string> missing;
  const auto find_missing = [&] {
    missing.clear();
    for (const std::string& k : keys)
      if (values_.find(k) == values_.end()) missing.push_back(k);
    return missing.empty();
  };
  changed_.wait_until(lock, deadline.at(), find_missing);
  return missing;
}

StoreValue InMemoryStore::do_get(std::string_view key, const Deadline& deadline) {
  const std::string k(key);
  std::unique_lock lock(mutex_);
  const std::vector<std::string> missing = wait_locked(lock, std::span(&k, 1), deadline);
  if (!missing.empty()) store_detail::throw_keys_timeout(describe(), "get", missing, deadline);
  return values_.find(k)->second;
}

void InMemoryStore::do_wait(std::span<const std::string> keys, const Deadline& deadline) {
  std::unique_lock lock(mutex_);
  const std::vector<std::string> missing = wait_locked(lock, keys, deadline);
  if (!missing.empty()) store_detail::throw_keys_timeout(describe(), "wait", missing, deadline);
}

std::int64_t InMemoryStore::do_add(std::string_view key, std::int64_t delta) {
  std::int64_t sum = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = values_.find(key);
    const std::span<const std::uint8_t> current =
        it == values_.end() ? std::span<const std::uint8_t>() : std::span(it->second);
    sum = store_detail::add_to_text(describe(), key, current, delta);
    const std::string text = std::to_string(sum);
    values_.insert_or_assign(std::string(key), StoreValue(text.begin(), text.end()));
  }
  changed_.notify_all();
  return sum;
}

StoreValue InMemoryStore::do_compare_set(std::string_view key,
                                         std::span<const std::uint8_t> expected,
                                         std::span<const std::uint8_t> desired) {
  StoreValue now;
  {
    std::lock_guard lock(mutex_);
    auto it = values_.find(key);
    if (it == values_.end()) {
      if (!expected.empty()) return StoreValue(expected.begin(), expected.end());
      it = values_.emplace(std::string(key), StoreValue(desired.begin(), desired.end())).first;
    } else if (std::equal(it->second.begin(), it->second.end(), expected.begin(), expected.end())) {
      it->second.assign(desired.begin(), desired.end());
    }
    now = it->second;
  }
  changed_.notify_all();
  return now;
}

bool InMemoryStore::do_remove(std::string_view key) {
  std::lock_guard lock(mutex_);
  const auto it = values_.find(key);
  if (it == values_.end()) return false;
  values_.erase(it);
  return true;
}

bool InMemoryStore::do_check(std::span<const std::string> keys) {
  std::lock_guard lock(mutex_);
  return std::all_of(keys.begin(), keys.end(),
                     [&](const std::string& k) { return values_.find(k) != values_.end(); });
}

}  // namespace ruccl
