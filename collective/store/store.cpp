#include "collective/store/store.h"

#include <charconv>
#include <limits>

#include "collective/common/collective_error.h"

namespace ruccl {

namespace {

std::span<const std::uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

void Store::set(std::string_view key, std::span<const std::uint8_t> value) {
  store_detail::check_key("set", key);
  store_detail::check_value_size("set", key, value.size());
  do_set(key, value);
}

void Store::set(std::string_view key, std::string_view value) { set(key, bytes_of(value)); }

StoreValue Store::get(std::string_view key, const Deadline& deadline) {
  store_detail::check_key("get", key);
  return do_get(key, deadline);
}

std::string Store::get_string(std::string_view key, const Deadline& deadline) {
  const StoreValue v = get(key, deadline);
  return std::string(v.begin(), v.end());
}

void Store::wait(std::span<const std::string> keys, const Deadline& deadline) {
  store_detail::check_keys("wait", keys);
  if (!keys.empty()) do_wait(keys, deadline);
}

std::int64_t Store::add(std::string_view key, std::int64_t delta) {
  store_detail::check_key("add", key);
  return do_add(key, delta);
}

StoreValue Store::compare_set(std::string_view key, std::span<const std::uint8_t> expected,
                              std::span<const std::uint8_t> desired) {
  store_detail::check_key("compare_set", key);
  store_detail::check_value_size("compare_set (expected)", key, expected.size());
  store_detail::check_value_size("compare_set (desired)", key, desired.size());
  return do_compare_set(key, expected, desired);
}

bool Store::remove(std::string_view key) {
  store_detail::check_key("remove", key);
  return do_remove(key);
}

bool Store::check(std::span<const std::string> keys) {
  store_detail::check_keys("check", keys);
  return keys.empty() || do_check(keys);
}

namespace store_detail {

namespace {

std::string shown_key(std::string_view key) {
  return key.size() <= 64 ? std::string(key) : str(key.substr(0, 64), "...");
}

}  // namespace

void check_key(std::string_view op, std::string_view key) {
  if (key.empty())
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str("store ", op, ": expected a key of 1 to ", kMaxStoreKeyBytes,
                              " bytes, got an empty key"));
  if (key.size() > kMaxStoreKeyBytes)
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str("store ", op, ": key '", shown_key(key), "' has ", key.size(),
                              " bytes, over the cap of ", kMaxStoreKeyBytes));
}

void check_value_size(std::string_view op, std::string_view key, std::size_t n) {
  if (n > kMaxStoreValueBytes)
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str("store ", op, " of key '", shown_key(key), "': the value has ", n,
                              " bytes, over the cap of ", kMaxStoreValueBytes, " bytes"));
}

void check_keys(std::string_view op, std::span<const std::string> keys) {
  if (keys.size() > kMaxStoreWaitKeys)
    throw CollectiveError(
        CollectiveErrorKind::InvalidArgument,
        str("store ", op, ": expected at most ", kMaxStoreWaitKeys, " keys, got ", keys.size()));
  for (const std::string& k : keys) check_key(op, k);
}

std::string quote_keys(const std::vector<std::string>& keys) {
  constexpr std::size_t kShown = 16;
  std::string out;
  for (std::size_t i = 0; i < keys.size() && i < kShown; ++i)
    out += str(i ? ", '" : "'", shown_key(keys[i]), "'");
  if (keys.size() > kShown) out += str(" and ", keys.size() - kShown, " more");
  return out;
}

void throw_keys_timeout(const std::string& store, std::string_view op,
                        const std::vector<std::string>& missing, const Deadline& deadline) {
  throw CollectiveError(
      CollectiveErrorKind::Timeout,
      str(store, ": ", op, " (", deadline.label(), "): ", missing.size() == 1 ? "key " : "keys ",
          quote_keys(missing), " not set within ", deadline.timeout().count(), " ms"));
}

std::int64_t add_to_text(const std::string& store, std::string_view key,
                         std::span<const std::uint8_t> current, std::int64_t delta) {
  std::int64_t value = 0;
  if (!current.empty()) {
    const char* first = reinterpret_cast<const char*>(current.data());
    const char* last = first + current.size();
    const auto [end, ec] = std::from_chars(first, last, value);
    if (ec != std::errc() || end != last) {
      const std::string shown(first, std::min<std::size_t>(current.size(), 32));
      throw CollectiveError(
          CollectiveErrorKind::InvalidArgument,
          str(store, ": add to key '", shown_key(key), "': expected a decimal int64 value, got '",
              shown, current.size() > 32 ? "...'" : "'"));
    }
  }
  std::int64_t sum = 0;
  if (__builtin_add_overflow(value, delta, &sum))
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str(store, ": add to key '", shown_key(key), "': ", value, " + ", delta,
                              " overflows int64"));
  return sum;
}

}  // namespace store_detail

}  // namespace ruccl
