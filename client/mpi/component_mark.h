// Exactly one of ohio's two bindings serves a process: when Open MPI has found ohio's collective
// component usable (client/openmpi_coll/), the LD_PRELOAD shim, if it is preloaded as well, passes
// every call through to the library, where the component serves it. The component marks the process
// in its environment, by process id, so a program the process starts does not inherit the mark.
#pragma once

namespace ohio::shim {

// Called by the component when Open MPI finds it usable.
void MarkComponentServes();
// Whether this process's component marked it.
bool ComponentServes();

}  // namespace ohio::shim
