#include "common/connection_refusals.h"

namespace ohio {

const char* ConnectionRefusalName(ConnectionRefusal r) {
  switch (r) {
    case ConnectionRefusal::kSourceCap: return "source_cap";
    case ConnectionRefusal::kTotalCap: return "total_cap";
    case ConnectionRefusal::kAuthTimeout: return "auth_timeout";
    case ConnectionRefusal::kMalformed: return "malformed";
    case ConnectionRefusal::kFrameTimeout: return "frame_timeout";
    case ConnectionRefusal::kOutOfDescriptors: return "out_of_descriptors";
    case ConnectionRefusal::kClosedUnauthenticated: return "closed_unauthenticated";
  }
  return "malformed";
}

}  // namespace ohio
