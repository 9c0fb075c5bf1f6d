// An invariant a fuzz target asserts about what the code under test returned: a violation is a
// logic bug, so it aborts (libFuzzer keeps the input as a crash) with what was expected.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                          \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", __FILE__, __LINE__, #cond, what); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)
