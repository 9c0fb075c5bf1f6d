#!/bin/bash
# Where an alltoall's time goes, stage by stage: averages the "ohio stages:" lines that ranks
# run with OHIO_STAGE_TIMES=1 print on stderr (client/libohio/stage_report.h) over ranks, per message
# size, as a markdown table of microseconds per call. Stages no rank spent time in are left out.
#
# usage: deploy/lib/stage-table.sh [FILE...]   (stdin when no file; other lines are ignored)
#   e.g. OHIO_STAGE_TIMES=1 mpirun ... 2> stages.txt; deploy/lib/stage-table.sh stages.txt
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,7p' "$0"; exit 0 ;; esac
awk '
  /^ohio stages: / {
    bytes = $6
    if (!(bytes in seen)) { seen[bytes] = 1; sizes[++ns] = bytes }
    ranks[bytes]++
    calls[bytes] += $8
    for (i = 9; i < NF; i += 2) {
      key = $i; sub(/_us$/, "", key)
      if (!(key in known)) { known[key] = 1; keys[++nk] = key }
      sum[bytes, key] += $(i + 1); cnt[bytes, key]++
      if ($(i + 1) + 0 != 0) used[key] = 1
    }
  }
  END {
    if (ns == 0) { print "no \"ohio stages:\" lines (was OHIO_STAGE_TIMES=1 set for the ranks?)" > "/dev/stderr"; exit 1 }
    header = "| bytes per rank | ranks | calls per rank"; rule = "| ---: | ---: | ---:"
    for (k = 1; k <= nk; k++) if (used[keys[k]]) { header = header " | " keys[k]; rule = rule " | ---:" }
    print header " |"; print rule " |"
    # sizes in numeric order
    for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (sizes[j] + 0 < sizes[i] + 0) { t = sizes[i]; sizes[i] = sizes[j]; sizes[j] = t }
    for (i = 1; i <= ns; i++) {
      b = sizes[i]; line = "| " b " | " ranks[b] " | " calls[b] / ranks[b]
      for (k = 1; k <= nk; k++) {
        if (!used[keys[k]]) continue
        line = line " | " (cnt[b, keys[k]] ? sprintf("%.2f", sum[b, keys[k]] / cnt[b, keys[k]]) : "-")
      }
      print line " |"
    }
  }' "$@"
