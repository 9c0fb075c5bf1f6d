// Naming the pair whose counts disagree in an alltoallv, once the count digest (shm/plan/vector_plan.h)
// has said that one does: the first pair in one order over every rank's table, so that every rank
// that looks, on whichever node, names the same pair with the same text.
//
// On one node every table is in the segment (shm/plan/local_vector_plan.h). Across nodes only a
// failed call pays for it: each node puts its ranks' tables, as they lie in its segment, in its
// slot of every peer's SRB for the failed round (past a header, over the block it already put
// there, which no rank reads: the round fails), and names the pair once every node's are in. A
// group whose slots cannot hold the tables of its node with the most ranks (the same answer on
// every node) gets the digest's verdict without a pair.
#pragma once

#include <cstdint>
#include <string>

#include "shm/plan/eager_plan.h"
#include "shm/plan/group_shape.h"
#include "shm/segment_layout.h"

namespace ohio {

// A pair whose counts disagree: `source` sends `sent` bytes to `reader`, which expects
// `expected` of it. found is false when every pair agrees.
struct VectorDisagreement {
  bool found = false;
  uint32_t source = 0;
  uint32_t reader = 0;
  uint64_t sent = 0;
  uint64_t expected = 0;
};

// The first pair that disagrees, readers in group-rank order, then sources; table_of(r) is group
// rank r's count table (size() entries).
template <typename TableOf>
VectorDisagreement FirstVectorDisagreementOf(const GroupShape& shape, TableOf table_of) {
  for (uint32_t reader = 0; reader < shape.size(); ++reader) {
    const CountEntry* expects = table_of(reader);
    for (uint32_t source = 0; source < shape.size(); ++source) {
      const uint64_t sent = table_of(source)[reader].bytes;
      if (sent != expects[source].recv_bytes) return {true, source, reader, sent, expects[source].recv_bytes};
    }
  }
  return {};
}

// FirstVectorDisagreementOf a group on one node, whose tables lie in local rank order.
VectorDisagreement FirstVectorDisagreement(const GroupShape& shape, const CountEntry* tables);

// What every rank of the call reports for a pair that disagrees.
std::string VectorDisagreementText(const VectorDisagreement& d);

// Bytes of the count tables of `node`'s ranks (one parity's, as they lie in the segment).
uint64_t VectorTablesBytes(const GroupShape& shape, uint32_t node);

// Whether every node's tables fit its slot of an eager round past the header.
bool VectorTablesFitSlots(const GroupShape& shape, const EagerLayout& layout);

}  // namespace ohio
