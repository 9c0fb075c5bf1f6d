// A group key given to a test tool as 32 hex digits (tests/harness KeyHex makes them).
#pragma once

#include <string>

#include "client/libohio/ohio.h"

inline bool ParseKey(const std::string& hex, unsigned char (&key)[OHIO_KEY_BYTES]) {
  if (hex.size() != 2 * OHIO_KEY_BYTES) return false;
  for (int i = 0; i < OHIO_KEY_BYTES; ++i) key[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return true;
}
