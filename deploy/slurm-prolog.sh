#!/bin/bash
# Slurm prolog example: a node whose ohiod is not healthy takes no job.
#
# slurm.conf:  Prolog=/usr/local/share/ohio/slurm-prolog.sh   (runs as root on each node of a
# job before it starts). When a prolog exits non-zero, Slurm drains the node and requeues the
# job; the reason below is logged to slurmd's log and, when scontrol is at hand, set as the
# node's drain reason (`sinfo -R` shows it).
#
# OHIOCTL and OHIO_ADMIN_SOCKET override where ohioctl and the daemon's admin socket are.
set -u
OHIOCTL=${OHIOCTL:-/usr/local/bin/ohioctl}
# ohioctl waits at most this long for an answer: a prolog must not hold a job up for long.
TIMEOUT_MS=${OHIO_HEALTH_TIMEOUT_MS:-10000}

out=$("$OHIOCTL" --timeout-ms "$TIMEOUT_MS" health 2>&1)
code=$?
if [ $code -eq 0 ]; then
  exit 0
fi
reason="ohio: ohioctl health exit $code: $(printf '%s' "$out" | tr '\n' ' ' | cut -c1-200)"
echo "$reason" >&2
if [ -n "${SLURMD_NODENAME:-}" ] && command -v scontrol >/dev/null 2>&1; then
  scontrol update NodeName="$SLURMD_NODENAME" State=DRAIN Reason="$reason" >/dev/null 2>&1 || true
fi
exit 1
