// ohiod's counters in the Prometheus text exposition format (version 0.0.4), as node_exporter's
// textfile collector reads it. ohiod writes it periodically (--metrics-file) and `ohioctl
// metrics` prints it: both format the same Counters reply here, so they cannot disagree.
#pragma once

#include <string>

#include "proto/admin.pb.h"

namespace ohio {

std::string PrometheusText(const admin::CountersReply& counters);

// Writes `text` to a temporary file beside `path` and renames it over `path`, so a reader
// never sees half a file. Mode 0644: node_exporter does not run as root.
bool WriteFileAtomically(const std::string& path, const std::string& text, std::string* error);

}  // namespace ohio
