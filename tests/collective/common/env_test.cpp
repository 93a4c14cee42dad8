// EnvReader: every kind of read returns what the variable holds, nothing when it is unset, and
// throws CollectiveError(InvalidConfig) naming the variable, what was expected and what came.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <map>
#include <string>

#include "collective/common/env.h"
#include "tests/collective/error_capture.h"

using namespace ruccl;
using ruccl::testing::error_of;

namespace {

using Vars = std::map<std::string, std::string>;

EnvReader reader(const Vars& vars, std::string context = {}, char quote = '"') {
  return EnvReader(
      [vars](const char* name) -> std::optional<std::string> {
        const auto it = vars.find(name);
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
      },
      std::move(context), quote);
}

// The message of the InvalidConfig error `f` throws.
template <typename F>
std::string message_of(F&& f) {
  const CollectiveError e = error_of(std::forward<F>(f));
  CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
  return e.what();
}

enum class Mode { Auto, On, Off };

}  // namespace

TEST_CASE("An unset variable reads as nothing and a set one as its value", "[collective][env]") {
  const EnvReader env = reader({{"A", "1"}, {"EMPTY", ""}});
  CHECK(env.get("A") == "1");
  CHECK(env.get("EMPTY") == "");
  CHECK(!env.get("B"));
  CHECK(env.has("EMPTY"));
  CHECK(!env.has("B"));
  CHECK(env.text("A") == "1");
  CHECK(!env.text("EMPTY"));  // empty means unset
  CHECK(!env.text("B"));
  CHECK(std::string(env.first_set({"B", "EMPTY", "A"})) == "EMPTY");
  CHECK(env.first_set({"B", "C"}) == nullptr);
  CHECK(!env.positive("B", "bytes"));
  CHECK(!env.non_negative("B", "bytes"));
  CHECK(!env.milliseconds("B"));
  CHECK(!env.optional_integer("B", 0, 9));
  CHECK(env.choice("B", {{"on", Mode::On}, {"off", Mode::Off}}, Mode::Auto) == Mode::Auto);
}

TEST_CASE("The process environment is read through getenv", "[collective][env]") {
  ::setenv("RUCCL_ENV_TEST_VARIABLE", "42", 1);
  CHECK(EnvReader().positive("RUCCL_ENV_TEST_VARIABLE", "bytes") == 42);
  CHECK(process_env()("RUCCL_ENV_TEST_VARIABLE") == "42");
  ::unsetenv("RUCCL_ENV_TEST_VARIABLE");
  CHECK(!EnvReader().get("RUCCL_ENV_TEST_VARIABLE"));
}

TEST_CASE("Positive and non-negative numbers accept decimal digits in range", "[collective][env]") {
  const EnvReader env = reader({{"ONE", "1"}, {"ZERO", "0"}, {"BIG", "999999999999999999"}});
  CHECK(env.positive("ONE", "bytes") == 1);
  CHECK(env.non_negative("ZERO", "bytes") == 0);
  CHECK(env.positive("BIG", "bytes") == 999999999999999999);
  CHECK(env.positive("ONE", "bytes", 1) == 1);
  CHECK(env.milliseconds("ONE") == std::chrono::milliseconds(1));
}

TEST_CASE("A bad number names the variable, the unit and the text", "[collective][env]") {
  for (const std::string bad :
       {"0", "-1", "+1", " 1", "1 ", "", "1.5", "0x10", "ten", "9999999999999999999"}) {
    INFO("value \"" << bad << "\"");
    const EnvReader env = reader({{"RUCCL_TCP_SPIN_US", bad}});
    CHECK(message_of([&] { (void)env.positive("RUCCL_TCP_SPIN_US", "microseconds"); }) ==
          "RUCCL_TCP_SPIN_US: expected a positive number of microseconds, got \"" + bad + "\"");
  }
  const EnvReader env = reader({{"Y", "-1"}, {"MS", "0"}, {"BYTES", "2147483648"}});
  CHECK(message_of([&] { (void)env.non_negative("Y", "microseconds"); }) ==
        "Y: expected a non-negative number of microseconds, got \"-1\"");
  CHECK(message_of([&] { (void)env.milliseconds("MS"); }) ==
        "MS: expected a positive number of milliseconds, got \"0\"");
  CHECK(message_of([&] { (void)env.non_negative("BYTES", "bytes", 2147483647); }) ==
        "BYTES: expected at most 2147483647 bytes, got 2147483648");
}

TEST_CASE("A bounded integer names its range, or what was missing", "[collective][env]") {
  const EnvReader env = reader({{"RANK", "4"}, {"SIZE", "4"}, {"PORT", "http"}}, "ctx: ");
  CHECK(env.integer("SIZE", 1, 8) == 4);
  CHECK(env.index("RANK", 5, "SIZE") == 4);
  CHECK(message_of([&] { (void)env.index("RANK", 4, "SIZE"); }) ==
        "ctx: RANK: expected an integer in [0, SIZE=4), got \"4\"");
  CHECK(message_of([&] { (void)env.integer("PORT", 1, 65535); }) ==
        "ctx: PORT: expected an integer in [1, 65535], got \"http\"");
  CHECK(message_of([&] { (void)env.integer("NODES", 1, 2, "a node count"); }) ==
        "ctx: NODES: expected a node count, got nothing (not set)");
  CHECK(message_of([&] { env.fail("SIZE", "a power of two times 3"); }) ==
        "ctx: SIZE: expected a power of two times 3, got \"4\"");
}

TEST_CASE("A choice returns the value of its spelling and lists the spellings otherwise",
          "[collective][env]") {
  const EnvReader env = reader({{"MODE", "on"}, {"BAD", "ON"}, {"ONE", "x"}});
  const auto modes = [&](const char* name) {
    return env.choice(name, {{"auto", Mode::Auto}, {"on", Mode::On}, {"off", Mode::Off}},
                      Mode::Auto);
  };
  CHECK(modes("MODE") == Mode::On);
  CHECK(message_of([&] { (void)modes("BAD"); }) == "BAD: expected auto, on or off, got \"ON\"");
  CHECK(message_of([&] {
          (void)env.choice("ONE", {{"auto", Mode::Auto}}, Mode::Off);
        }) == "ONE: expected auto, got \"x\"");
  CHECK(message_of([&] {
          (void)env.choice("ONE", {{"auto", Mode::Auto}, {"off", Mode::Off}}, Mode::Off);
        }) == "ONE: expected auto or off, got \"x\"");
}

TEST_CASE("A choice in any case matches every case and says so when it fails",
          "[collective][env]") {
  const EnvReader env = reader({{"LEVEL", "Info"}, {"BAD", "LOUD"}}, "", '\'');
  const auto level = [&](const char* name) {
    return env.choice(name, {{"WARN", 1}, {"INFO", 2}}, 0, EnvCase::Any);
  };
  CHECK(level("LEVEL") == 2);
  CHECK(level("UNSET") == 0);
  CHECK(message_of([&] { (void)level("BAD"); }) ==
        "BAD: expected WARN or INFO (any case), got 'LOUD'");
}

TEST_CASE("Values in messages are escaped and long ones cut", "[collective][env]") {
  CHECK(quote_env_value("plain") == "\"plain\"");
  CHECK(quote_env_value("a\"b\\c") == "\"a\\\"b\\\\c\"");
  CHECK(quote_env_value("3\n\x7f") == "\"3\\x0a\\x7f\"");
  CHECK(quote_env_value("it's", '\'') == "'it\\'s'");
  const std::string quoted = quote_env_value(std::string(1000, '9'));
  CHECK(quoted == "\"" + std::string(200, '9') + "\" (1000 characters, cut)");
  const EnvReader env = reader({{"N", "1\t2"}});
  CHECK(message_of([&] { (void)env.positive("N", "bytes"); }) ==
        "N: expected a positive number of bytes, got \"1\\x092\"");
}

TEST_CASE("parse_decimal takes only plain decimal digits below 10^18", "[collective][env]") {
  CHECK(parse_decimal("0") == 0u);
  CHECK(parse_decimal("007") == 7u);
  CHECK(parse_decimal("999999999999999999") == 999999999999999999u);
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1e3", "0x1", "1000000000000000000"}) {
    INFO("text \"" << bad << "\"");
    CHECK(!parse_decimal(bad));
  }
}
