// Fixed-width little-endian integers in byte buffers: the framing of the control channel, of
// the TCP transport and of the daemons' exchange messages, independent of the host's order.
#pragma once

#include <cstdint>

namespace ohio {

template <typename T>
inline void PutLittleEndian(char* p, T v) {
  for (unsigned i = 0; i < sizeof(T); ++i) p[i] = static_cast<char>(v >> (8 * i));
}

template <typename T>
inline T GetLittleEndian(const char* p) {
  T v = 0;
  for (int i = sizeof(T) - 1; i >= 0; --i) v = static_cast<T>(v << 8 | static_cast<uint8_t>(p[i]));
  return v;
}

}  // namespace ohio
