#include "daemon/exchange/round_protocol.h"

namespace ohio {

bool RoundProtocol::Asked(uint32_t n) const {
  const Heard& h = s_.heard[n][s_.round & 1];
  return h.round == s_.round && h.known && h.mixed;
}

void RoundProtocol::ReactToMixedSigns() {
  if (!s_.active || s_.ready_sent) return;
  for (uint32_t n = 0; n < s_.shape.nodes(); ++n) {
    if (n != s_.node && Asked(n)) {
      s_.SendOwnReady();
      return;
    }
  }
}

}  // namespace ohio
