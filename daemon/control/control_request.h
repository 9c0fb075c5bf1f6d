// What a client asks on the control socket, decoded and checked before the daemon acts on it:
// the pure "bytes -> request or clear error" half of the control server, which the fuzzer
// (tests/fuzz) runs on the same code as the daemon.
#pragma once

#include <string>

#include "common/status.h"
#include "daemon/engine/group_spec.h"
#include "daemon/ops/config.h"
#include "proto/control.pb.h"

namespace ohio {

// One frame's payload as a client message; kProtocol if it is not one this daemon knows.
Result<control::ClientMessage> ParseControlRequest(const std::string& payload);

// A client's Hello: kProtocol (to be answered with Error::VERSION) when its protocol differs.
Status CheckHello(const control::Hello& hello);

// A JoinGroup checked on its own and against this daemon's settings (its node name, the
// largest group, the default algorithm): the group it describes, or kInvalidArgument saying
// what is wrong. Whether the group fits in memory and agrees with the ranks that joined
// before is the registry's to decide.
Result<GroupSpec> ValidateJoin(const control::JoinGroup& join, const DaemonConfig& config);

}  // namespace ohio
