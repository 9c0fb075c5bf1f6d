// Reading another rank's messages straight out of its send buffer (process_vm_readv), as Open
// MPI's shared-memory transport does, so that a large call on one node costs one copy instead
// of two through the SSB. The kernel allows it between processes of the same user unless
// ptrace restrictions (Yama's ptrace_scope, a process that is not dumpable, a security module)
// forbid it; a rank offers its buffer only when it knows of no such restriction, and a refusal
// that still happens makes the group fall back to two copies.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "common/status.h"

namespace ohio {

// Whether this process may offer its send buffer to be read: ptrace_scope (if Yama is there)
// is 0 and the process is dumpable. Checked once per process.
bool SingleCopyPossible();

// Message bytes (for an alltoallv, the mean block of a rank's row) from which a call is read in
// place: $OHIO_SINGLE_COPY_BYTES (0 turns single copies off; read once per process), else 32 KiB
// where every rank has a core, 256 KiB where the node's ranks and its daemon outnumber its CPUs
// (`oversubscribed`, from the CPUs the daemon tells every rank alike: the ranks of a node must
// decide alike). Reading in place costs a second meeting (a rank may return only once the others
// are done reading its buffer): a spin where ranks have cores, a sleep and a wake-up where they
// share them, which on shared cores made reading in place slower than two copies below the
// higher threshold and faster above it (docs/ARCHITECTURE.md and
// docs/investigations/reading-in-place-on-shared-cores.md have the figures).
uint64_t SingleCopyThreshold(bool oversubscribed);
// The same from $OHIO_SINGLE_COPY_BYTES's value (nullptr: unset), pure.
uint64_t SingleCopyThresholdFor(const char* env, bool oversubscribed);

enum class ReadOutcome { kDone, kRefused, kBadAddress, kGone };

// Copies `bytes` from `remote` in process `pid` to `local`, looping over partial reads.
// kGone: the process no longer exists. kBadAddress: a range is not mapped (EFAULT: the caller's
// counts or displacements are wrong). kRefused: any other failure (permission), with errno's
// text in *why.
ReadOutcome ReadFromRank(pid_t pid, uint64_t remote, void* local, uint64_t bytes, std::string* why);

// Prints, once per process, that a single copy was refused and the group falls back.
void SayRefusedOnce(pid_t pid, const std::string& why);

// The PID namespace this process's pid is a number in, as one comparable value (the device and
// inode of /proc/self/ns/pid, which the kernel gives every namespace alone); 0 when /proc does
// not say (no /proc in a container). Ranks in separate containers each have their own PID
// namespace: there a pid a rank publishes names another process, or none, for a rank of
// another container, so single copies are only for ranks that all publish the same value.
// Read once per process.
uint64_t PidNamespaceId();
// The same from a stat of a namespace file (pure): (device << 32) | inode.
uint64_t PidNamespaceIdOf(uint64_t device, uint64_t inode);

// Prints, once per process, that the group's ranks on this node are in different PID
// namespaces (or one of them cannot tell its own) and so copy through shared memory.
void SaySeparatePidNamespacesOnce();

}  // namespace ohio
