// Junk for a daemon's ports, as a confused or hostile program would send it: random bytes, a
// length prefix of 4 GiB, an HTTP/2 preface followed by noise, an ohio data-port header of
// the right magic for an unnamed connection, a hello from a node nobody configured, a
// connection closed at once, half a header. Each goes over its own connection, which is
// closed right after (the daemon must cope with what is left unread, too).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace ohio::soak {

struct GarbageSent {
  uint32_t connections = 0;  // made and fed
  uint32_t refused = 0;      // could not connect (counted: a daemon that stops accepting is a finding)
};

// To a unix stream socket, or to 127.0.0.1:port.
GarbageSent SendGarbageToUnix(const std::string& path, std::mt19937_64& rng);
GarbageSent SendGarbageToTcp(int port, std::mt19937_64& rng);

}  // namespace ohio::soak
