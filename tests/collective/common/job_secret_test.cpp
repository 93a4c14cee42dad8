// The job secret (collective/common/job_secret.h): parsing that never echoes the text, the secret
// file's mode check, RUCCL_REQUIRE_SECRET, OpenSSL's HMAC against RFC 4231, and the one-way names.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include "collective/common/job_secret.h"
#include "collective/transport/tcp/tcp_options.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

const std::string kHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeef1";

EnvLookup lookup(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::string hex_of(const Mac& mac) {
  std::string out;
  char two[3];
  for (const std::uint8_t b : mac) {
    std::snprintf(two, sizeof two, "%02x", b);
    out += two;
  }
  return out;
}

}  // namespace

TEST_CASE("a job secret parses from 64 hex digits, and a bad one is refused without its text",
          "[collective][security]") {
  const JobSecret s = parse_job_secret(kHex, "RUCCL_JOB_SECRET");
  CHECK(s.bytes[0] == 0x00);
  CHECK(s.bytes[31] == 0xf1);
  CHECK(job_secret_to_hex(s) == kHex);
  CHECK(job_secret_to_hex(parse_job_secret(kHex + "\n", "f")) == kHex);  // a file's newline
  std::string upper = kHex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(job_secret_to_hex(parse_job_secret(upper, "f")) == kHex);

  const std::string wrong = kHex.substr(0, 40) + "zz" + kHex.substr(42);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kHex.substr(1), "got 63 characters"},
      {kHex + "00", "got 66 characters"},
      {wrong, "got a non-hex character at position 40"},
      {std::string(64, '0'), "got all zeros"}};
  for (const auto& [bad, why] : cases) {
    const std::string text = bad;  // a lambda may not capture a structured binding (clang 14)
    const CollectiveError e = error_of([&] { parse_job_secret(text, "RUCCL_JOB_SECRET"); });
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    CHECK(contains(e.what(), "RUCCL_JOB_SECRET: expected 64 hex digits (a 256-bit job secret"));
    CHECK(contains(e.what(), why));
    CHECK_FALSE(contains(e.what(), text.substr(0, 20)));  // never the secret's text
  }
  CHECK(random_job_secret().bytes != random_job_secret().bytes);
}

TEST_CASE("a secret file is read only when no one but its owner may read it",
          "[collective][security]") {
  char folder[] = "/tmp/ruccl-job-secret-XXXXXX";
  REQUIRE(::mkdtemp(folder) != nullptr);
  const std::string path = std::string(folder) + "/secret";
  std::ofstream(path) << kHex << "\n";
  ::chmod(path.c_str(), 0600);
  CHECK(job_secret_to_hex(read_job_secret_file(path)) == kHex);
  ::chmod(path.c_str(), 0400);
  CHECK(job_secret_to_hex(read_job_secret_file(path)) == kHex);
  ::chmod(path.c_str(), 0660);
  const CollectiveError e = error_of([&] { read_job_secret_file(path); });
  CHECK(contains(e.what(), "--secret-file " + path +
                               ": expected a file only its owner can read (mode 0600 or 0400), "
                               "got mode 0660: run chmod 600 " +
                               path));
  const CollectiveError missing = error_of([&] { read_job_secret_file(path + ".none"); });
  CHECK(contains(missing.what(), "cannot open it: No such file or directory"));
  std::remove(path.c_str());
  ::rmdir(folder);
}

TEST_CASE("RUCCL_JOB_SECRET is read from the environment, and RUCCL_REQUIRE_SECRET=1 needs it",
          "[collective][security]") {
  CHECK_FALSE(job_secret_from_env(lookup({})).has_value());
  CHECK_FALSE(job_secret_from_env(lookup({{"RUCCL_REQUIRE_SECRET", "0"}})).has_value());
  const auto got = job_secret_from_env(lookup({{"RUCCL_JOB_SECRET", kHex}}));
  REQUIRE(got.has_value());
  CHECK(job_secret_to_hex(*got) == kHex);
  const CollectiveError required = error_of([&] {
    job_secret_from_env(lookup({{"RUCCL_REQUIRE_SECRET", "1"}}));
  });
  CHECK(contains(required.what(),
                 "RUCCL_REQUIRE_SECRET=1: expected RUCCL_JOB_SECRET (64 hex "
                 "digits) in the environment, got nothing"));
  const CollectiveError odd = error_of([&] {
    job_secret_from_env(lookup({{"RUCCL_REQUIRE_SECRET", "yes"}}));
  });
  CHECK(contains(odd.what(), "RUCCL_REQUIRE_SECRET: expected 0 or 1, got \"yes\""));
  const CollectiveError bad = error_of([&] {
    job_secret_from_env(lookup({{"RUCCL_JOB_SECRET", "abc"}}));
  });
  CHECK(contains(bad.what(), "RUCCL_JOB_SECRET: expected 64 hex digits"));
}

TEST_CASE("hmac_sha256 is HMAC-SHA256 (RFC 4231 test case 2), over its parts joined",
          "[collective][security]") {
  const std::string key = "Jefe", a = "what do ya want ", b = "for nothing?";
  const auto bytes = [](const std::string& s) {
    return std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
  };
  const Mac mac = hmac_sha256(bytes(key), {bytes(a), bytes(b)});
  CHECK(hex_of(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(job_secrets_equal(mac, hmac_sha256(bytes(key), {bytes(a + b)})));
  CHECK_FALSE(job_secrets_equal(mac, hmac_sha256(bytes("jefe"), {bytes(a + b)})));
}

TEST_CASE("derived names reveal neither the secret nor the session and differ by secret and label",
          "[collective][security]") {
  const SessionId session = random_session_id();
  const JobSecret secret = random_job_secret();
  const std::string with = derived_name(secret, session, "shm ruccl/tcp");
  const std::string without = derived_name(std::nullopt, session, "shm ruccl/tcp");
  CHECK(with.size() == 32);
  CHECK(with != without);
  CHECK(with != derived_name(secret, session, "shm other"));
  CHECK(with == derived_name(secret, session, "shm ruccl/tcp"));  // every rank derives the same
  const std::string session_hex = session_id_to_hex(session);
  for (const std::string& name : {with, without}) {
    CHECK_FALSE(contains(name, session_hex.substr(0, 8)));
    CHECK_FALSE(contains(job_secret_to_hex(secret), name.substr(0, 8)));
  }
}

TEST_CASE("RUCCL_INTEGRITY is off or mac, and mac needs a secret", "[collective][security]") {
  CHECK(integrity_from_env(false, Integrity::Off, lookup({})) == Integrity::Off);
  CHECK(integrity_from_env(true, Integrity::Off, lookup({{"RUCCL_INTEGRITY", "mac"}})) ==
        Integrity::Mac);
  CHECK(integrity_from_env(false, Integrity::Off, lookup({{"RUCCL_INTEGRITY", "off"}})) ==
        Integrity::Off);
  const auto error = [](bool secret, const std::string& value) {
    try {
      integrity_from_env(secret, Integrity::Off, lookup({{"RUCCL_INTEGRITY", value}}));
    } catch (const CollectiveError& e) {
      CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error(false, "mac"),
             Catch::Contains("RUCCL_INTEGRITY: expected off, or mac together with "
                             "RUCCL_JOB_SECRET") &&
                 Catch::Contains("got \"mac\""));
  CHECK_THAT(error(true, "gmac"), Catch::Contains("RUCCL_INTEGRITY: expected off or mac") &&
                                      Catch::Contains("got \"gmac\""));
}
