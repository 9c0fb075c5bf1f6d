// What ohioctl prints for each admin reply: text for a person, JSON for a script. Pure
// functions of the replies, apart from the RPCs, so they are tested without a daemon.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "proto/admin.pb.h"

namespace ohio::ctl {

nlohmann::json StatusJson(const admin::StatusReply& s);
std::string StatusText(const admin::StatusReply& s);

nlohmann::json PeersJson(const admin::ListPeersReply& p);
std::string PeersText(const admin::ListPeersReply& p);

nlohmann::json GroupsJson(const admin::ListGroupsReply& g);
std::string GroupsText(const admin::ListGroupsReply& g);

nlohmann::json CountersJson(const admin::CountersReply& c);
std::string CountersText(const admin::CountersReply& c);

// `watch`: a header, then one line per sample with rates since the previous one (totals for
// the first, when there is no previous).
std::string WatchHeader();
std::string WatchLine(const admin::CountersReply* previous, const admin::CountersReply& now);

nlohmann::json HealthJson(const admin::HealthReply& h);
std::string HealthText(const admin::HealthReply& h);

// 1536 -> "1.5 KiB"; 3725 s -> "1h 2m"; 0.00025 s -> "250 µs".
std::string Bytes(uint64_t bytes);
std::string Duration(uint64_t seconds);
std::string Latency(double seconds);

// The smallest bucket bound below which a fraction q of the histogram's samples lie; +Inf if
// only the last bucket reaches it, NaN for an empty histogram.
double QuantileBound(const admin::LatencyHistogram& h, double q);

}  // namespace ohio::ctl
