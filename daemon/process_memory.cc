#include "daemon/process_memory.h"

#include <algorithm>
#include <climits>

namespace ohio {

ssize_t TransferPieces(pid_t pid, const std::vector<iovec>& local, const std::vector<iovec>& remote, bool writing) {
  ssize_t total = 0;
  for (size_t i = 0; i < local.size(); i += IOV_MAX) {
    const auto n = static_cast<unsigned long>(std::min<size_t>(IOV_MAX, local.size() - i));
    const ssize_t moved = writing ? process_vm_writev(pid, &local[i], n, &remote[i], n, 0)
                                  : process_vm_readv(pid, &local[i], n, &remote[i], n, 0);
    if (moved < 0) return moved;
    total += moved;
  }
  return total;
}

}  // namespace ohio
