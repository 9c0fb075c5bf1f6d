#!/bin/bash
# MPI_Ialltoall latency and overlap (osu_ialltoall's definition, tests/bench/mpi_ialltoall_bench.c)
# with a computation that spins on the rank's core (--compute busy, osu's) or sleeps, leaving
# the core as a rank waiting on a GPU kernel or on I/O does (--compute sleep), on one host, as
# one node or as --nodes K emulated nodes (K ohiods on 127.0.0.1, ranks placed consecutively,
# --ranks / K per node, each given its node's daemon by tests/mpi/on_node.sh; the libraries
# themselves still see one host): Open MPI alone, Open MPI + ohio (libohio_mpi_openmpi.so
# preloaded), MPICH alone and MPICH + ohio, against the ohiods started here, interleaved and
# repeated (--runs, the order rotated each run). Prints per variant and size the medians over
# the runs of the pure latency, the overlap %, the CPU time and the context switches per call
# (ranks, and ohiod for the ohio variants: node 0's), the time MPI_Wait still takes after 2 ms
# of computation and the time MPI_Ialltoall and MPI_Wait take around it (what the call costs a
# program computing 2 ms), and the ratio of the pure latencies with / without ohio.
#
# usage: tests/bench/ialltoall_overlap.sh [--ranks P (4)] [--min-bytes B (1)] [--max-bytes B (1048576)]
#          [--runs R (3)] [--iterations N (per size; default by size)] [--mpi openmpi|mpich|both (both)]
#          [--daemon-nice N (0): ohiod's nice value, as a systemd unit's Nice= would set it] [--nodes K (1)]
#          [--vector: MPI_Ialltoallv of the same blocks instead] [--compute busy|sleep (busy)]
# As root, after: bazel build //daemon:ohiod //client:libohio_mpi_openmpi.so
#   //client:libohio_mpi_mpich.so //tests/bench:mpi_ialltoall_bench_openmpi //tests/bench:mpi_ialltoall_bench_mpich
#   (only those of the --mpi asked for)
set -euo pipefail
cd "$(dirname "$0")/../.."
RANKS=4
MIN_BYTES=1
MAX_BYTES=1048576
RUNS=3
ITERATIONS=0
MPIS="openmpi mpich"
DAEMON_NICE=0
NODES=1
VECTOR=
COMPUTE=busy
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --min-bytes) MIN_BYTES=$2; shift 2 ;;
    --max-bytes) MAX_BYTES=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --mpi) MPIS=$2; [ "$MPIS" = both ] && MPIS="openmpi mpich"; shift 2 ;;
    --daemon-nice) DAEMON_NICE=$2; shift 2 ;;
    --nodes) NODES=$2; shift 2 ;;
    --vector) VECTOR=vector; shift ;;
    --compute) COMPUTE=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "ialltoall_overlap.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$COMPUTE" in
  busy) SLEEP= ;;
  sleep) SLEEP=sleep ;;
  *) echo "ialltoall_overlap.sh: --compute is busy or sleep, not $COMPUTE" >&2; exit 2 ;;
esac
BIN=bazel-bin
NEEDED=(daemon/ohiod)
for m in $MPIS; do NEEDED+=("client/libohio_mpi_$m.so" "tests/bench/mpi_ialltoall_bench_$m"); done
for f in "${NEEDED[@]}"; do
  [ -e "$BIN/$f" ] || { echo "ialltoall_overlap.sh: $BIN/$f is missing; build it first (see --help)" >&2; exit 2; }
done
[ $((RANKS % NODES)) = 0 ] || { echo "ialltoall_overlap.sh: --ranks must be a multiple of --nodes" >&2; exit 2; }
DIR=$(mktemp -d /tmp/ohio-ialltoall.XXXXXX)
# Peer and data ports for every node, free now (bound by the kernel, then released).
read -r -a PORTS <<<"$(python3 -c "
import socket
ss = [socket.socket() for _ in range(2 * $NODES)]
for s in ss: s.bind(('127.0.0.1', 0))
print(' '.join(str(s.getsockname()[1]) for s in ss))")"
PEERS=()
for ((i = 0; i < NODES; i++)); do PEERS+=(--peer "node$i=127.0.0.1:${PORTS[$((2 * i))]}"); done
DAEMONS=()
SOCKETS=
trap 'for d in "${DAEMONS[@]}"; do kill "$d" 2>/dev/null; wait "$d" 2>/dev/null; done; rm -rf "$DIR"' EXIT
for ((i = 0; i < NODES; i++)); do
  peers=()
  [ "$NODES" -gt 1 ] && peers=(--node-name "node$i" "${PEERS[@]}")
  nice -n "$DAEMON_NICE" "$BIN/daemon/ohiod" --socket "$DIR/ohiod$i.sock" --admin-socket "$DIR/admin$i.sock" \
    --peer-port "$([ "$NODES" -gt 1 ] && echo "${PORTS[$((2 * i))]}" || echo 0)" \
    --data-port "$([ "$NODES" -gt 1 ] && echo "${PORTS[$((2 * i + 1))]}" || echo 0)" \
    --listen 127.0.0.1 --advertise 127.0.0.1 --auth none "${peers[@]}" >"$DIR/ohiod$i.log" 2>&1 &
  DAEMONS+=($!)
  SOCKETS+="${SOCKETS:+:}$DIR/ohiod$i.sock"
done
for ((i = 0; i < NODES; i++)); do
  for _ in $(seq 100); do [ -S "$DIR/ohiod$i.sock" ] && break; sleep 0.1; done
  [ -S "$DIR/ohiod$i.sock" ] || { echo "ialltoall_overlap.sh: ohiod $i did not start" >&2; cat "$DIR/ohiod$i.log" >&2; exit 1; }
done
DAEMON=${DAEMONS[0]}
PLACE=(env OHIO_TEST_SOCKETS="$SOCKETS" OHIO_TEST_PPN=$((RANKS / NODES)) tests/mpi/on_node.sh)

run() {  # variant run
  local mpi=${1%+ohio} with_ohio=0 pid=0
  [ "$1" != "$mpi" ] && with_ohio=1 && pid=$DAEMON
  local prog=$BIN/tests/bench/mpi_ialltoall_bench_$mpi args=("$MIN_BYTES" "$MAX_BYTES" "$ITERATIONS" "$pid" 2000 $VECTOR $SLEEP)
  if [ "$mpi" = openmpi ]; then
    local env=()
    [ $with_ohio = 1 ] && env=(-x "LD_PRELOAD=$PWD/$BIN/client/libohio_mpi_openmpi.so" -x OHIO_IALLTOALL_MIN_BYTES=0)
    timeout 600 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$RANKS" --mca pml ob1 --mca btl vader,self \
      "${env[@]}" "${PLACE[@]}" "$prog" "${args[@]}"
  else
    local env=()
    [ $with_ohio = 1 ] && env=(-genv LD_PRELOAD "$PWD/$BIN/client/libohio_mpi_mpich.so" -genv OHIO_IALLTOALL_MIN_BYTES 0)
    timeout 600 mpirun.mpich -launcher fork -np "$RANKS" "${env[@]}" "${PLACE[@]}" "$prog" "${args[@]}"
  fi
}

VARIANTS=()
for m in $MPIS; do VARIANTS+=("$m" "$m+ohio"); done
for r in $(seq 0 $((RUNS - 1))); do
  for i in $(seq 0 $((${#VARIANTS[@]} - 1))); do
    v=${VARIANTS[$(((i + r) % ${#VARIANTS[@]}))]}
    echo "run $r: $v" >&2
    run "$v" | grep -v '^#' | sed "s/^/$v /" >>"$DIR/results"
  done
done
python3 - "$DIR/results" "$RANKS" "$RUNS" "$NODES" "${VECTOR:+MPI_Ialltoallv}" "$COMPUTE" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 10: continue
    v, b = f[0], int(f[1])
    rows.setdefault((v, b), []).append([float(x) for x in f[2:]])
print(f"# {sys.argv[5] or 'MPI_Ialltoall'}, {sys.argv[2]} ranks on one host as {sys.argv[4]} node(s), computation: {sys.argv[6]}, median of {sys.argv[3]} interleaved runs; 1-minute load average after: {open('/proc/loadavg').read().split()[0]}")
print("# variant bytes pure_us overlap_pct cpu_us_per_call ctx_per_call wait_after_2ms_us exposed_around_2ms_us pure_ratio_vs_library")
for (v, b) in sorted(rows, key=lambda k: (k[1], k[0])):
    m = [statistics.median(c) for c in zip(*rows[(v, b)])]
    ratio = "-"
    if v.endswith("+ohio") and (v[:-5], b) in rows:
        base = statistics.median(r[0] for r in rows[(v[:-5], b)])
        ratio = f"{m[0] / base:.2f}"
    print(f"{v:13s} {b:8d} {m[0]:9.2f} {m[3]:6.1f} {m[4]:9.1f} {m[5]:7.2f} {m[6]:9.2f} {m[7]:9.2f} {ratio}")
PY
