// SessionId: random ids differ, hex round trips in either case, bad text is refused naming where
// it came from, and ids derived from a seed are stable (every rank of a job must agree).
#include <catch2/catch.hpp>

#include <cctype>
#include <string>

#include "collective/common/session_id.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using ruccl::testing::error_of;

TEST_CASE("Random session ids differ and are never all zero", "[collective][session]") {
  const SessionId a = random_session_id();
  const SessionId b = random_session_id();
  CHECK(a != b);
  CHECK(a != SessionId{});
}

TEST_CASE("A session id round trips through 32 hex digits in either case",
          "[collective][session]") {
  SessionId id{};
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<std::uint8_t>(0xA0 + i);
  const std::string hex = session_id_to_hex(id);
  CHECK(hex == "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
  CHECK(format_session_id(id) == hex);
  CHECK(parse_session_id(hex) == id);
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  CHECK(parse_session_id(upper, "RUCCL_SESSION_ID") == id);
  const SessionId random = random_session_id();
  CHECK(parse_session_id(session_id_to_hex(random)) == random);
}

TEST_CASE("Text that is not 32 hex digits, or all zeros, is refused naming its source",
          "[collective][session]") {
  for (const std::string bad :
       {"", "a0", "a0a1a2a3a4a5a6a7a8a9aaabacadaeafff", "g0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
        "00000000000000000000000000000000", " a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"}) {
    INFO("text \"" << bad << "\"");
    const CollectiveError e = error_of([&] { (void)parse_session_id(bad, "--session-id"); });
    CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
    CHECK(std::string(e.what()) ==
          "--session-id: expected 32 hex digits, not all zero (a session id; `ruccl-run "
          "--new-session-id` prints a fresh one), got \"" +
              bad + "\"");
  }
  const CollectiveError e = error_of([] { (void)parse_session_id("zz"); });
  CHECK_THAT(e.what(), Catch::StartsWith("parse_session_id: expected 32 hex digits"));
}

TEST_CASE("A session id from a seed is stable and differs between seeds", "[collective][session]") {
  // Golden values (computed in Python from the formula in session_id_from_seed's comment): ranks
  // of one job, and of builds before and after a change, must derive the same id.
  CHECK(session_id_to_hex(session_id_from_seed("")) == "262999ba601fd0ef1acbd586ea7846b9");
  CHECK(session_id_to_hex(session_id_from_seed("ruccl-run@127.0.0.1:29500")) ==
        "129c3026ba0ce4a8e7c9e41a1b35483f");
  CHECK(session_id_from_seed("a") != session_id_from_seed("b"));
  CHECK(session_id_from_seed("slurm:1.0@n:1") == session_id_from_seed("slurm:1.0@n:1"));
}
