#include "shm/selection_notice.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <new>

namespace ohio {

Result<SelectionNotice> SelectionNotice::Create(uint64_t generation) {
  // This mapping stays writable; no later one can be (nor a write(2), nor a resize).
  auto page = SharedPage::Create("ohiod-selection-notice",
                                 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL);
  if (!page.ok()) return page.status();
  SelectionNotice n;
  n.page_ = std::move(page).value();
  new (n.page_.data()) Words{kMagic, {generation}};
  return n;
}

Result<SelectionNotice> SelectionNotice::Map(int fd) {
  auto page = SharedPage::Map(fd, PROT_READ, "ohiod's selection notice");
  if (!page.ok()) return page.status();
  SelectionNotice n;
  n.page_ = std::move(page).value();
  if (n.words()->magic != kMagic) return Status(Code::kProtocol, "ohiod's selection notice has the wrong magic number");
  return n;
}

}  // namespace ohio
