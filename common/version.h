#pragma once

namespace ohio {

constexpr char kVersion[] = "0.1.0";
// Bumped whenever the control messages change incompatibly. The segment's layout has a version
// of its own (kSegmentVersion, shm/segment_layout.h), which a rank checks when it maps a segment.
constexpr unsigned kControlProtocolVersion = 1;
// Bumped whenever daemons' peer messages, transport frames or plans change incompatibly.
// 3: a credential in the data hello; 4: OpenGroupReply.opened, which a node's first round waits for;
// 5: SideOpened, a node's side told to the others once instead of their asking for it;
// 6: the hypercube pairs nodes (XOR) when their number is a power of two;
// 7: an alltoallv's first round runs as a hypercube whose messages carry their blocks' sizes
//    and the count digest's sums (shm/plan/vector_cube.h)
constexpr unsigned kPeerProtocolVersion = 7;

}  // namespace ohio
