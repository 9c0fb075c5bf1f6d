// Whether a process other than ohiod can still reach a group's segment: a departed rank (or
// a child it forked, or a process it passed the descriptor to) may still map the memfd or hold
// a descriptor of it, and could then write into whatever group is given the segment next.
// Read from /proc: every process's mappings and open descriptors, matched by the memfd's inode.
#pragma once

#include <optional>
#include <string>

namespace ohio {

// The first process other than this one that maps the memfd `fd` or holds a descriptor of it,
// described for the log ("pid 123 maps it"); empty if there is none. A process whose /proc
// entries this daemon may not read counts as a holder (it cannot be ruled out) unless it was
// running before this daemon started, so before any segment of its existed: such a process
// could not have inherited one from a rank, only been sent its descriptor on purpose.
std::optional<std::string> OtherSegmentHolder(int fd);

}  // namespace ohio
