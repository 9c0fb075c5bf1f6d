#include "daemon/exchange/exchange_message.h"

#include <cstring>

#include "common/little_endian.h"

namespace ohio {
namespace {

void Put32(uint8_t* at, uint32_t v) { PutLittleEndian(reinterpret_cast<char*>(at), v); }
void Put64(uint8_t* at, uint64_t v) { PutLittleEndian(reinterpret_cast<char*>(at), v); }
uint32_t Get32(const uint8_t* at) { return GetLittleEndian<uint32_t>(reinterpret_cast<const char*>(at)); }
uint64_t Get64(const uint8_t* at) { return GetLittleEndian<uint64_t>(reinterpret_cast<const char*>(at)); }

}  // namespace

ExchangeMessage::Encoded ExchangeMessage::Encode() const {
  Encoded s{};
  s[0] = static_cast<uint8_t>(type);
  s[1] = static_cast<uint8_t>((sizes_disagree ? 1 : 0) | (opted_out ? 2 : 0) | (left ? 4 : 0));
  Put32(&s[4], tag);
  Put32(&s[8], round);
  Put32(&s[12], delivery);
  Put64(&s[16], bytes_per_rank);
  std::memcpy(&s[24], key.data(), key.size());
  return s;
}

std::optional<ExchangeMessage> ExchangeMessage::Decode(const uint8_t* s, size_t size) {
  if (size != kBytes) return std::nullopt;
  ExchangeMessage m;
  if (s[0] != static_cast<uint8_t>(Type::kRoundReady) && s[0] != static_cast<uint8_t>(Type::kCredit) &&
      s[0] != static_cast<uint8_t>(Type::kRankGone)) {
    return std::nullopt;
  }
  m.type = static_cast<Type>(s[0]);
  m.sizes_disagree = (s[1] & 1) != 0;
  m.opted_out = (s[1] & 2) != 0;
  m.left = (s[1] & 4) != 0;
  m.tag = Get32(&s[4]);
  m.round = Get32(&s[8]);
  m.delivery = Get32(&s[12]);
  m.bytes_per_rank = Get64(&s[16]);
  std::memcpy(m.key.data(), &s[24], m.key.size());
  return m;
}

}  // namespace ohio
