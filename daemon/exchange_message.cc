#include "daemon/exchange_message.h"

#include <cstring>

#include "common/little_endian.h"

namespace ohio {
namespace {

constexpr size_t kBytes = 40;

void Put32(std::string& s, size_t at, uint32_t v) { PutLittleEndian(&s[at], v); }
void Put64(std::string& s, size_t at, uint64_t v) { PutLittleEndian(&s[at], v); }
uint32_t Get32(const std::string& s, size_t at) { return GetLittleEndian<uint32_t>(&s[at]); }
uint64_t Get64(const std::string& s, size_t at) { return GetLittleEndian<uint64_t>(&s[at]); }

}  // namespace

std::string ExchangeMessage::Encode() const {
  std::string s(kBytes, '\0');
  s[0] = static_cast<char>(type);
  s[1] = static_cast<char>((sizes_disagree ? 1 : 0) | (skipped ? 2 : 0));
  Put32(s, 4, tag);
  Put32(s, 8, round);
  Put32(s, 12, delivery);
  Put64(s, 16, bytes_per_rank);
  std::memcpy(&s[24], key.data(), key.size());
  return s;
}

std::optional<ExchangeMessage> ExchangeMessage::Decode(const std::string& s) {
  if (s.size() != kBytes) return std::nullopt;
  ExchangeMessage m;
  if (s[0] != static_cast<char>(Type::kRoundReady) && s[0] != static_cast<char>(Type::kCredit)) return std::nullopt;
  m.type = static_cast<Type>(s[0]);
  m.sizes_disagree = (s[1] & 1) != 0;
  m.skipped = (s[1] & 2) != 0;
  m.tag = Get32(s, 4);
  m.round = Get32(s, 8);
  m.delivery = Get32(s, 12);
  m.bytes_per_rank = Get64(s, 16);
  std::memcpy(m.key.data(), &s[24], m.key.size());
  return m;
}

}  // namespace ohio
