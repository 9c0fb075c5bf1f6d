// Moving a rank's bytes in its own address space (process_vm_readv/writev), for the calls the
// daemon moves on the ranks' behalf (offloaded_alltoall.h, offloaded_remote_alltoall.h).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <vector>

namespace ohio {

// Reads (or writes) the paired pieces: local[i] from (into) remote[i] in process `pid`. The
// kernel takes at most IOV_MAX pieces a side per call, so both lists are cut at the same
// places. The bytes moved, or -1 with errno set.
ssize_t TransferPieces(pid_t pid, const std::vector<iovec>& local, const std::vector<iovec>& remote, bool writing);

}  // namespace ohio
