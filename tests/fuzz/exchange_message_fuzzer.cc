// An exchange message (ROUND_READY, CREDIT, RANK_GONE) from a peer daemon, decoded as the exchange decodes
// it: only 40-byte messages of a known type are accepted, and what is accepted encodes and
// decodes back to the same values and to the same bytes, but for the flag bits and the two
// reserved bytes the encoder writes as zero.
#include <cstdint>
#include <cstring>

#include "daemon/exchange/exchange_message.h"
#include "tests/fuzz/fuzz_check.h"

using ohio::ExchangeMessage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = ExchangeMessage::Decode(data, size);
  if (!m) return 0;
  FUZZ_CHECK(size == ExchangeMessage::kBytes, "only whole messages decode");
  FUZZ_CHECK(m->type == ExchangeMessage::Type::kRoundReady || m->type == ExchangeMessage::Type::kCredit ||
                 m->type == ExchangeMessage::Type::kRankGone,
             "a known type");
  const ExchangeMessage::Encoded e = m->Encode();
  FUZZ_CHECK(e[0] == data[0], "the type byte re-encodes");
  FUZZ_CHECK(e[1] == (data[1] & 7), "the three flags re-encode, and no other bit");
  FUZZ_CHECK(e[2] == 0 && e[3] == 0, "reserved bytes are written as zero");
  FUZZ_CHECK(std::memcmp(e.data() + 4, data + 4, ExchangeMessage::kBytes - 4) == 0, "the fields re-encode to their bytes");
  auto back = ExchangeMessage::Decode(e.data(), e.size());
  FUZZ_CHECK(back && back->type == m->type && back->sizes_disagree == m->sizes_disagree && back->opted_out == m->opted_out && back->left == m->left &&
                 back->tag == m->tag && back->round == m->round && back->delivery == m->delivery &&
                 back->bytes_per_rank == m->bytes_per_rank && back->key == m->key,
             "a message round-trips");
  return 0;
}
