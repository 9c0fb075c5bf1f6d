// splitmix64's finaliser: a 64-bit value scrambled so that nearby inputs give unrelated outputs.
// For hashes that must agree between processes (alltoallv's count digest) and for test data.
#pragma once

#include <cstdint>

namespace ohio {

inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace ohio
