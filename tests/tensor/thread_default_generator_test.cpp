// ThreadDefaultGenerator: a thread's own default generator (what run_ranks gives each rank
// thread), leaving the process's, which other threads see, untouched.
#include <catch2/catch.hpp>

#include <cstdint>
#include <thread>
#include <vector>

#include "tensor/random/thread_default_generator.h"

using namespace ruccl;

namespace {

std::uint64_t draw() {
  return with_default_generator([](Generator& g) { return g.next_u64(); });
}

Generator::State process_state() {
  return with_default_generator([](Generator& g) { return g.state(); });
}

}  // namespace

TEST_CASE("a ThreadDefaultGenerator is this thread's default generator while it lives",
          "[tensor]") {
  const Generator::State before = process_state();
  Generator seven(7);
  const std::uint64_t expected_first = seven.next_u64();
  const std::uint64_t expected_second = seven.next_u64();
  {
    ThreadDefaultGenerator own(Generator(7));
    CHECK(draw() == expected_first);
    {
      ThreadDefaultGenerator inner(Generator(9));  // nests
      CHECK(draw() == Generator(9).next_u64());
      manual_seed(9);  // reseeds the innermost only
      CHECK(draw() == Generator(9).next_u64());
    }
    CHECK(draw() == expected_second);  // the outer one continues where it was
    manual_seed(5);
    CHECK(draw() == Generator(5).next_u64());
    // Another thread still sees the process's generator, untouched.
    Generator::State seen{};
    std::thread other([&] { seen = process_state(); });
    other.join();
    CHECK(seen == before);
  }
  CHECK(process_state() == before);  // back to the process's, which never moved
}
