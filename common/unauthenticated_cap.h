// Whether a port admits one more accepted connection that has not proved itself yet (the data
// port's hello, the peer port's first authenticated call): at most `max` such connections at
// once, and one address half of them, so that one host cannot take every slot from the others.
// Pure: the caller counts, and closes what is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/connection_refusals.h"

namespace ohio {

struct CapRefusal {
  ConnectionRefusal reason;  // kTotalCap or kSourceCap
  std::string why;           // for the log, naming `setting`
};

// nullopt: admit. `total` and `of_source` are the unauthenticated connections held now, in all
// and from `host`; `setting` is the name of the setting `max` comes from, `unproven` what such
// connections have not done yet ("have not said hello yet").
std::optional<CapRefusal> JudgeUnauthenticated(size_t total, size_t of_source, uint32_t max, const std::string& host,
                                               const std::string& setting, const std::string& unproven);

// max's per-address share: half, at least one.
inline size_t PerSourceShare(uint32_t max) { return max / 2 > 0 ? max / 2 : 1; }

}  // namespace ohio
