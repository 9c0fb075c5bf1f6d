#include "daemon/ops/address_ranges.h"

#include <arpa/inet.h>

#include <cstring>

namespace ohio {

Result<AddressRanges> AddressRanges::Parse(const std::string& text) {
  AddressRanges out;
  size_t from = 0;
  if (text.find_first_not_of(" \t") == std::string::npos) return out;
  for (;;) {
    const size_t comma = text.find(',', from);
    std::string item = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    auto bad = [&](const std::string& why) {
      return Status(Code::kInvalidArgument, "peer-networks: '" + item + "': " + why +
                                                " (expected networks such as 10.1.0.0/16 or fd00::/8)");
    };
    const size_t slash = item.find('/');
    const std::string address = item.substr(0, slash);
    Network n;
    if (inet_pton(AF_INET, address.c_str(), n.bytes.data()) == 1) {
      n.family = AF_INET;
    } else if (inet_pton(AF_INET6, address.c_str(), n.bytes.data()) == 1) {
      n.family = AF_INET6;
    } else {
      return bad("not an IPv4 or IPv6 address");
    }
    const uint32_t bits = n.family == AF_INET ? 32 : 128;
    n.prefix = bits;
    if (slash != std::string::npos) {
      const std::string len = item.substr(slash + 1);
      if (len.empty() || len.size() > 3 || len.find_first_not_of("0123456789") != std::string::npos ||
          std::stoul(len) > bits) {
        return bad("the prefix length must be 0 to " + std::to_string(bits));
      }
      n.prefix = static_cast<uint32_t>(std::stoul(len));
    }
    out.networks_.push_back(n);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  return out;
}

bool AddressRanges::Contains(const sockaddr* address) const {
  std::array<uint8_t, 16> bytes{};
  int family = address->sa_family;
  if (family == AF_INET) {
    std::memcpy(bytes.data(), &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, 4);
  } else if (family == AF_INET6) {
    const in6_addr& a6 = reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr;
    std::memcpy(bytes.data(), &a6, 16);
    // An IPv4 address as IPv6 gives it (::ffff:a.b.c.d) is judged as the IPv4 one.
    if (IN6_IS_ADDR_V4MAPPED(&a6)) {
      family = AF_INET;
      std::memmove(bytes.data(), bytes.data() + 12, 4);
      std::memset(bytes.data() + 4, 0, 12);
    }
  } else {
    return false;
  }
  for (const Network& n : networks_) {
    if (n.family != family) continue;
    bool inside = true;
    for (uint32_t bit = 0; bit < n.prefix && inside; ++bit) {
      const uint8_t mask = static_cast<uint8_t>(0x80u >> (bit % 8));
      inside = (bytes[bit / 8] & mask) == (n.bytes[bit / 8] & mask);
    }
    if (inside) return true;
  }
  return false;
}

}  // namespace ohio
