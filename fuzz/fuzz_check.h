#pragma once
// FUZZ_CHECK(cond): a fuzzer's invariant. When it breaks, say which and trap, so that libFuzzer
// (and the corpus replay test) report the input as a crash.
#include <cstdio>

#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: broken invariant: %s\n", __FILE__, __LINE__, #cond); \
      __builtin_trap();                                                                 \
    }                                                                                   \
  } while (0)
