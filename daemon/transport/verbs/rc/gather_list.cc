#include "daemon/transport/verbs/rc/gather_list.h"

#include <algorithm>
#include <cstring>

namespace ohio {

void RangeSges(const LocalPiece* pieces, size_t count, uint64_t from, uint64_t len, uint32_t lkey,
               std::vector<ibv_sge>* out) {
  out->clear();
  for (size_t i = 0; i < count && len > 0; ++i) {
    const LocalPiece& p = pieces[i];
    if (from >= p.bytes) {
      from -= p.bytes;
      continue;
    }
    const uint64_t n = std::min(len, p.bytes - from);
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(static_cast<const uint8_t*>(p.base) + from);
    sge.length = static_cast<uint32_t>(n);
    sge.lkey = lkey;
    out->push_back(sge);
    len -= n;
    from = 0;
  }
}

void Gather(const LocalPiece* pieces, size_t count, uint64_t from, uint64_t len, uint8_t* dst) {
  for (size_t i = 0; i < count; ++i) {
    const LocalPiece& p = pieces[i];
    if (len == 0) return;
    if (from >= p.bytes) {
      from -= p.bytes;
      continue;
    }
    const uint64_t n = std::min(len, p.bytes - from);
    std::memcpy(dst, static_cast<const uint8_t*>(p.base) + from, n);
    dst += n;
    len -= n;
    from = 0;
  }
}

}  // namespace ohio
