# shellcheck shell=bash
# Stopping the processes a script started, without waiting for ever: shared by
# deploy/lib/netns-cluster.sh (local-cluster.sh, mpi-compare.sh) and tests/bench/verbs_vs_tcp.sh.
# Messages are prefixed with the script's name.

# Waits up to $2 seconds for pid $1 to exit; true if it did.
wait_gone() {
  local pid=$1 deadline=$(( SECONDS + $2 ))
  while kill -0 "$pid" 2>/dev/null; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.1
  done
}

# SIGTERM to pid $1, SIGKILL if it is still there after $2 seconds (default 10); reaps it.
stop_pid() {
  local pid=$1 grace=${2:-10}
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null
  if ! wait_gone "$pid" "$grace"; then
    echo "$(basename "$0"): pid $pid ignored SIGTERM for $grace s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null || true
  return 0
}
