#include "client/mpi/component_mark.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace ohio::shim {
namespace {

constexpr const char* kVariable = "OHIO_OPENMPI_COMPONENT_PID";

}  // namespace

void MarkComponentServes() { setenv(kVariable, std::to_string(getpid()).c_str(), 1); }

bool ComponentServes() {
  const char* v = std::getenv(kVariable);
  return v != nullptr && std::to_string(getpid()) == v;
}

}  // namespace ohio::shim
