#!/bin/bash
# at_idle_priority.sh COMMAND [ARG]...: runs COMMAND, and all it starts, so that it takes only the
# CPU and disk time that nothing else wants: work made ahead in the background (tests/run.sh)
# must not slow the tests it runs beside, whose deadlines assume the machine as it would be
# without it.
#
# Start it in a session of its own (setsid). With autogroup scheduling, Linux's default, the CPU
# is first shared out between sessions, each as one, and a nice value only weighs within its
# session: so the session's own weight is lowered as well (/proc/self/autogroup).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARG]..." >&2; exit 2; }
if [ -w /proc/self/autogroup ]; then
  echo 19 > /proc/self/autogroup 2>/dev/null ||
    echo "at_idle_priority.sh: could not lower this session's CPU weight; nice only" >&2
fi
exec nice -n 19 ionice -c 3 "$@"
