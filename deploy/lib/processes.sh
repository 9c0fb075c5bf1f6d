# shellcheck shell=bash
# Waiting for the processes a script started, and stopping them, without waiting for ever: shared
# by deploy/lib/netns-cluster.sh (local-cluster.sh, mpi-compare.sh) and scripts of tests/bench.
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

# wait_socket_accepts SOCKET PID SECONDS: waits until the Unix socket SOCKET accepts a connection
# (its file appears before it accepts: connecting is the real test); false if process PID exits
# or SECONDS pass first.
wait_socket_accepts() {
  local socket=$1 pid=$2 deadline=$(( SECONDS + $3 ))
  until python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect(sys.argv[1])' \
        "$socket" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || [ $SECONDS -ge $deadline ]; then return 1; fi
    sleep 0.1
  done
}
