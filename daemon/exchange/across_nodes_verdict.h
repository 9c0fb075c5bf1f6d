// The round verdict across nodes (docs/GLOSSARY.md), taken once every other node's M and flags
// are known (from ROUND_READY or an eager header): whether every node runs the round with the
// same M and its own ranks agree, who opted out, and for an alltoallv whether the counts add up
// and how many rounds the call takes. The same facts on every node give the same verdict, and
// the same error text.
#pragma once

#include "daemon/exchange/round_state.h"
#include "daemon/exchange/vector_call.h"

namespace ohio {

class VectorRound;

class AcrossNodesVerdict {
 public:
  AcrossNodesVerdict(RoundState* state, VectorCall* call, VectorRound* vector_round)
      : s_(*state), call_(*call), vector_round_(*vector_round) {}
  // Takes the verdict if every node's word is in and it was not taken yet.
  void Check();

 private:
  RoundState& s_;
  VectorCall& call_;
  VectorRound& vector_round_;
};

}  // namespace ohio
