#pragma once
// error_of(f): runs f, which must throw a CollectiveError, and returns it so a test can check the
// kind and the message; a test fails (not crashes) when f returns or throws something else.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <utility>

#include "collective/common/collective_error.h"

namespace ruccl::testing {

template <typename F>
CollectiveError error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const CollectiveError& e) {
    return e;
  } catch (const std::exception& e) {
    FAIL("expected a CollectiveError, got another exception: " << e.what());
  }
  FAIL("expected a CollectiveError, got none");
  return CollectiveError(CollectiveErrorKind::InvalidArgument, "unreachable: FAIL throws");
}

/// Whether `text` contains `part` (for CHECK with both printed on failure).
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace ruccl::testing
