#include "common/status.h"

#include <cstring>

namespace ohio {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kNoDaemon: return "no daemon";
    case Code::kProtocol: return "protocol error";
    case Code::kRefused: return "refused";
    case Code::kNoMemory: return "not enough shared memory";
    case Code::kSizeMismatch: return "size mismatch";
    case Code::kGroupFailed: return "group failed";
    case Code::kTimeout: return "timeout";
    case Code::kDaemonLost: return "daemon connection lost";
    case Code::kSystem: return "system error";
    case Code::kNotSupported: return "not supported";
    case Code::kOptedOut: return "opted out";
  }
  return "unknown error";
}

Status SystemError(const std::string& what, int err) {
  return Status(Code::kSystem, what + ": " + std::strerror(err));
}

}  // namespace ohio
