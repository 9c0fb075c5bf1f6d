#include "daemon/transport/verbs/ud/ud_put_fragments.h"

#include <algorithm>
#include <string>

namespace ohio {

std::vector<UdFragment> CutUdPut(uint32_t bytes, uint32_t payload_bytes) {
  std::vector<UdFragment> pieces;
  if (payload_bytes == 0) return pieces;
  pieces.reserve(bytes / payload_bytes + 1);
  uint32_t at = 0;
  do {
    const uint32_t n = std::min(payload_bytes, bytes - at);
    pieces.push_back({at, n});
    at += n;
  } while (at < bytes);
  return pieces;
}

Result<std::optional<uint32_t>> UdPutAssembly::Landed(uint32_t put, uint64_t start, uint64_t total, uint32_t imm,
                                                      uint32_t at, uint32_t bytes) {
  const std::string which = "UD put " + std::to_string(put);
  if (at > total || bytes > total - at) {
    return Status(Code::kProtocol, which + ": a piece of " + std::to_string(bytes) + " bytes at " + std::to_string(at) +
                                       " lies outside its " + std::to_string(total) + " bytes");
  }
  auto [it, first] = puts_.try_emplace(put, Partial{start, total, 0, imm});
  Partial& p = it->second;
  if (!first && (p.start != start || p.total != total || p.imm != imm)) {
    return Status(Code::kProtocol, which + ": a piece says another start, size or immediate than its put's first");
  }
  if (bytes > p.total - p.landed) {
    return Status(Code::kProtocol, which + ": more bytes landed than the put has");
  }
  p.landed += bytes;
  // An empty put is complete with its one empty piece.
  if (p.landed < p.total) return std::optional<uint32_t>();
  puts_.erase(it);
  return std::optional<uint32_t>(imm);
}

}  // namespace ohio
