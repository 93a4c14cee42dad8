#include "collective/common/job_secret.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "collective/common/collective_error.h"

namespace ruccl {

namespace {

[[noreturn]] void secret_error(std::string message) {
  throw CollectiveError(CollectiveErrorKind::InvalidConfig, std::move(message));
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

void fill_random(std::span<std::uint8_t> out, const char* who) {
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::getrandom(out.data() + got, out.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      secret_error(str(who, ": getrandom failed: ", std::strerror(errno)));
    }
    got += static_cast<std::size_t>(n);
  }
}

JobSecret random_job_secret() {
  JobSecret secret;
  fill_random(secret.bytes, "random_job_secret");
  return secret;
}

std::string job_secret_to_hex(const JobSecret& secret) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * secret.bytes.size());
  for (const std::uint8_t b : secret.bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

JobSecret parse_job_secret(std::string_view hex, std::string_view what) {
  if (!hex.empty() && hex.back() == '\n') hex.remove_suffix(1);
  if (!hex.empty() && hex.back() == '\r') hex.remove_suffix(1);
  JobSecret secret;
  const std::string expected = str(
      what, ": expected 64 hex digits (a 256-bit job secret, e.g. `openssl rand -hex 32`), got ");
  if (hex.size() != 2 * secret.bytes.size()) secret_error(str(expected, hex.size(), " characters"));
  bool all_zero = true;
  for (std::size_t i = 0; i < hex.size(); ++i) {
    const char c = hex[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) secret_error(str(expected, "a non-hex character at position ", i));
    secret.bytes[i / 2] = static_cast<std::uint8_t>(secret.bytes[i / 2] << 4 | digit);
    all_zero = all_zero && digit == 0;
  }
  if (all_zero) secret_error(str(expected, "all zeros"));
  return secret;
}

JobSecret read_job_secret_file(const std::string& path, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) secret_error(str(what, " ", path, ": cannot open it: ", std::strerror(errno)));
  struct stat st {};
  std::string text;
  try {
    if (::fstat(fd, &st) != 0) secret_error(str(what, " ", path, ": ", std::strerror(errno)));
    if (!S_ISREG(st.st_mode)) secret_error(str(what, " ", path, ": expected a regular file"));
    if (st.st_uid != ::geteuid()) {
      secret_error(str(what, " ", path, ": expected a file of this user (uid ", ::geteuid(),
                       "), got one of uid ", st.st_uid));
    }
    if ((st.st_mode & 077) != 0) {
      secret_error(str(what, " ", path,
                       ": expected a file only its owner can read (mode 0600 or 0400), got mode ",
                       octal_mode(st.st_mode), ": run chmod 600 ", path));
    }
    char buffer[130];
    std::size_t got = 0;
    for (;;) {
      const ssize_t n = ::read(fd, buffer + got, sizeof buffer - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) secret_error(str(what, " ", path, ": ", std::strerror(errno)));
      if (n == 0 || got + static_cast<std::size_t>(n) == sizeof buffer) {
        got += static_cast<std::size_t>(n);
        break;
      }
      got += static_cast<std::size_t>(n);
    }
    text.assign(buffer, got);
    OPENSSL_cleanse(buffer, sizeof buffer);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  const JobSecret secret = parse_job_secret(text, str(what, " ", path));
  OPENSSL_cleanse(text.data(), text.size());
  return secret;
}

std::optional<JobSecret> job_secret_from_env(const EnvLookup& env) {
  if (const std::optional<std::string> hex = env("RUCCL_JOB_SECRET")) {
    return parse_job_secret(*hex, "RUCCL_JOB_SECRET");
  }
  const std::optional<std::string> require = env("RUCCL_REQUIRE_SECRET");
  if (require && *require != "0" && !require->empty()) {
    if (*require != "1") {
      EnvReader(env).fail_value("RUCCL_REQUIRE_SECRET", "0 or 1", require);
    }
    secret_error(
        "RUCCL_REQUIRE_SECRET=1: expected RUCCL_JOB_SECRET (64 hex digits) in the environment, "
        "got nothing: start the job with ruccl-run (it makes one per job), or give every rank the "
        "same secret (ruccl-run --secret-file F on every node, or RUCCL_JOB_SECRET)");
  }
  return std::nullopt;
}

bool job_secrets_equal(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Mac hmac_sha256(std::span<const std::uint8_t> key,
                std::initializer_list<std::span<const std::uint8_t>> parts) {
  // The one-shot HMAC() (OpenSSL 3 deprecates HMAC_CTX, not this) over the parts joined: every
  // message here is a few hundred bytes at most.
  std::vector<std::uint8_t> message;
  for (const auto& part : parts) message.insert(message.end(), part.begin(), part.end());
  Mac mac{};
  unsigned length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), message.data(), message.size(),
           mac.data(), &length) == nullptr ||
      length != mac.size()) {
    secret_error("hmac_sha256: OpenSSL's HMAC failed");
  }
  return mac;
}

std::string derived_name(const std::optional<JobSecret>& secret, const SessionId& session,
                         std::string_view label) {
  static constexpr std::string_view kContext = "ruccl name v1";
  const auto bytes = [](std::string_view s) {
    return std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  };
  const std::uint8_t separator = 0;
  const Mac mac = hmac_sha256(secret ? std::span<const std::uint8_t>(secret->bytes)
                                     : std::span<const std::uint8_t>(session),
                              {bytes(kContext),
                               {&separator, 1},
                               bytes(label),
                               {&separator, 1},
                               std::span<const std::uint8_t>(session)});
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < 16; ++i) {
    out.push_back(kDigits[mac[i] >> 4]);
    out.push_back(kDigits[mac[i] & 15]);
  }
  return out;
}

}  // namespace ruccl
