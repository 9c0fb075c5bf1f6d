#include "shm/hand_back_page.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <new>

namespace ohio {

Result<HandBackPage> HandBackPage::Create() {
  // Its size is fixed before anyone else holds it: the daemon's reads can never fault.
  auto page = SharedPage::Create("ohiod-hand-backs", F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  if (!page.ok()) return page.status();
  HandBackPage p;
  p.page_ = std::move(page).value();
  new (p.page_.data()) Words{};
  p.words()->magic = kMagic;
  return p;
}

Result<HandBackPage> HandBackPage::Map(int fd) {
  auto page = SharedPage::Map(fd, PROT_READ | PROT_WRITE, "ohiod's hand-back page");
  if (!page.ok()) return page.status();
  HandBackPage p;
  p.page_ = std::move(page).value();
  if (p.words()->magic != kMagic) return Status(Code::kProtocol, "ohiod's hand-back page has the wrong magic number");
  return p;
}

}  // namespace ohio
