#!/bin/bash
# RC only, a pool of one RC queue pair, and UD only: the verbs transport's two services in the
# same Soft-RoCE guest, same sizes, ratios to RC printed.
#
# Runs INSIDE the guest of tests/vm (real verbs over rxe0/rxe1). In one invocation it starts three
# sets of K ohiods, all `--transport verbs` on 127.0.0.1 with ports and sockets of their own:
#   rc     --rc-pool unlimited  one RC queue pair per peer node and rail, no UD
#   pool1  --rc-pool 1          one RC queue pair per rail at most, the other peers over UD
#                               (kept by the first peers connected: --rc-pool-interval-ms 0, so
#                               that no move between services falls inside a timed call)
#   ud     --rc-pool 0          every peer over UD
# and runs alltoall_bench (multi-node mode: --sockets, --ppn, the daemons' pids so that their CPU
# time counts) against each set with the same ranks per node, algorithm and calls. For each size
# the sets take turns (rc pool1 ud, pool1 ud rc, ud rc pool1, ...), REPS runs each, and the table
# shows the median per set of the latency and of the CPU time per call (ranks and daemons).
# Before anything is timed every set is checked: its daemons report the pool asked for, and after
# a warm-up call every daemon's RC queue pairs and peers over UD are what the pool allows.
#
# From the host (builds, snapshots the binaries, boots the guest and runs this script in it):
#   bash tests/bench/rc_pool_bench.sh --vm [OPTIONS]
#
# Options:
#   --nodes K        daemons per set (3..6, default 4)
#   --ppn P          rank processes per node (default 2)
#   --sizes LIST     bytes per rank, comma-separated (default 1,64,1024,4096,65536,1048576)
#   --algorithm A    v1, v2 or v3 (default v1: one put per peer node, so every put of a pool1 node
#                    but one goes over UD)
#   --reps R         bench runs per size and set, taking turns (default 3; the median is shown)
#   --iterations N   timed calls per size and run (default 200 up to 4 KiB, 40 up to 64 KiB, 8 above)
#   --bin DIR        where ohiod, ohioctl and alltoall_bench are (default: bazel-bin/...)
#   --vm             host side: build, then run all this in a fresh guest (OHIO_VM_TIMEOUT,
#                    default here 3600 s); --no-build skips the build
#
# Soft-RoCE is RDMA in software on emulated CPUs, where a datagram and an RDMA write cost much the
# same kernel work: the ratios say how the UD service's own protocol costs compare, not what a
# real HCA, where RC is done by the adapter and UD's receive copy is the host's, would show.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/../.."
PROG=rc_pool_bench.sh

NODES=4
PPN=2
SIZES=1,64,1024,4096,65536,1048576
ALGORITHM=v1
REPS=3
ITERATIONS=
BIN=
VM=0
BUILD=1
PASS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; PASS+=("$1" "$2"); shift 2 ;;
    --ppn) PPN=$2; PASS+=("$1" "$2"); shift 2 ;;
    --sizes) SIZES=$2; PASS+=("$1" "$2"); shift 2 ;;
    --algorithm) ALGORITHM=$2; PASS+=("$1" "$2"); shift 2 ;;
    --reps) REPS=$2; PASS+=("$1" "$2"); shift 2 ;;
    --iterations) ITERATIONS=$2; PASS+=("$1" "$2"); shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --vm) VM=1; shift ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
number() { case "$2" in ''|*[!0-9]*) echo "$PROG: $1 needs a number, got '$2'" >&2; exit 2 ;; esac; }
number --nodes "$NODES"; number --ppn "$PPN"; number --reps "$REPS"
[ -z "$ITERATIONS" ] || number --iterations "$ITERATIONS"
if [ "$NODES" -lt 3 ] || [ "$NODES" -gt 6 ] || [ "$PPN" -lt 1 ] || [ "$PPN" -gt 8 ] || [ "$REPS" -lt 1 ]; then
  echo "$PROG: --nodes must be 3..6 (a pool of one needs two peers beyond it), --ppn 1..8, --reps at least 1" >&2
  exit 2
fi
case "$ALGORITHM" in v1|v2|v3) ;; *) echo "$PROG: unknown algorithm '$ALGORITHM' (v1, v2, v3)" >&2; exit 2 ;; esac
IFS=, read -r -a SIZE_LIST <<<"$SIZES"
for s in "${SIZE_LIST[@]}"; do number --sizes "$s"; done

if [ "$VM" = 1 ]; then
  if [ "$BUILD" = 1 ]; then
    bazel build --curses=no //daemon:ohiod //client:ohioctl //tests/bench:alltoall_bench
  fi
  [ -n "$BIN" ] || BIN=$(bazel info --curses=no bazel-bin 2>/dev/null)
  SNAP=$(mktemp -d /tmp/ohio-rpb-bin.XXXXXX)
  trap 'rm -rf "$SNAP"' EXIT
  cp "$BIN/daemon/ohiod" "$BIN/client/ohioctl" "$BIN/tests/bench/alltoall_bench" "$SNAP/"
  export OHIO_VM_TIMEOUT=${OHIO_VM_TIMEOUT:-3600}
  echo "# host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %T UTC')"
  echo "# binaries from $BIN, commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)$(
    [ -z "$(git status --porcelain -- daemon client proto tests/bench 2>/dev/null)" ] || echo " with uncommitted changes")"
  rc=0
  tests/vm/rxe_guest.sh bash tests/bench/rc_pool_bench.sh --bin "$SNAP" "${PASS[@]}" || rc=$?
  echo "# host: load average $(cut -d' ' -f1-3 /proc/loadavg) after"
  exit $rc
fi

# ------------------------------------------------------------------------------------------------
# In the guest.
# ------------------------------------------------------------------------------------------------
ls /sys/class/infiniband/*/ports >/dev/null 2>&1 ||
  { echo "$PROG: no RDMA device here; run it in the Soft-RoCE guest (--vm)" >&2; exit 2; }
command -v jq >/dev/null || { echo "$PROG: needs jq" >&2; exit 2; }
[ -n "$BIN" ] || BIN=$(readlink -f bazel-bin)
ulimit -l unlimited 2>/dev/null || true
DIR=$(mktemp -d /tmp/ohio-rpb.XXXXXX)
for f in daemon/ohiod client/ohioctl tests/bench/alltoall_bench; do
  if [ -x "$BIN/$f" ]; then cp "$BIN/$f" "$DIR/"; else cp "$BIN/$(basename $f)" "$DIR/"; fi
done
SETS=(rc pool1 ud)
declare -A POOL=([rc]=unlimited [pool1]=1 [ud]=0)
declare -A PIDS
. deploy/lib/processes.sh   # stop_pid
cleanup() {
  local rc=$?
  set +e
  trap - EXIT
  for k in "${!PIDS[@]}"; do stop_pid "${PIDS[$k]}" 15; done
  rm -rf "$DIR"
  exit $rc
}
trap cleanup EXIT

BASE=$(( 27000 + RANDOM % 2000 ))
set_index() { case "$1" in rc) echo 0 ;; pool1) echo 1 ;; ud) echo 2 ;; esac; }
peer_port() { echo $(( BASE + 2 * ($(set_index "$1") * NODES + $2) )); }
sock() { echo "$DIR/$1$2.sock"; }
admin() { echo "$DIR/$1$2.admin.sock"; }
for t in "${SETS[@]}"; do
  peers=()
  for ((i = 0; i < NODES; i++)); do peers+=(--peer "node$i=127.0.0.1:$(peer_port "$t" $i)"); done
  for ((i = 0; i < NODES; i++)); do
    "$DIR/ohiod" --node-name "node$i" --socket "$(sock "$t" $i)" --admin-socket "$(admin "$t" $i)" \
      --listen 127.0.0.1 --advertise 127.0.0.1 --peer-port "$(peer_port "$t" $i)" \
      --data-port $(( $(peer_port "$t" $i) + 1 )) --transport verbs --rc-pool "${POOL[$t]}" \
      --rc-pool-interval-ms 0 --timeout-ms 120000 --auth none "${peers[@]}" 2> "$DIR/$t$i.log" &
    PIDS[$t,$i]=$!
  done
done
for t in "${SETS[@]}"; do
  for ((i = 0; i < NODES; i++)); do
    deadline=$(( SECONDS + 180 ))
    until "$DIR/ohioctl" --socket "$(admin "$t" $i)" --timeout-ms 10000 status >/dev/null 2>&1 && [ -S "$(sock "$t" $i)" ]; do
      if ! kill -0 "${PIDS[$t,$i]}" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
        echo "$PROG: $t node$i did not come up:" >&2; cat "$DIR/$t$i.log" >&2; exit 1
      fi
      sleep 0.2
    done
  done
done
socks() { for ((i = 0; i < NODES; i++)); do sock "$1" $i; done | paste -sd,; }
pids() { for ((i = 0; i < NODES; i++)); do echo "${PIDS[$1,$i]}"; done | paste -sd,; }
bench() {  # set bytes iterations csv
  timeout --kill-after=10 1800 "$DIR/alltoall_bench" --sockets "$(socks "$1")" --ppn "$PPN" --algorithms "$ALGORITHM" \
    --min-bytes "$2" --max-bytes "$2" --iterations "$3" --rounds 1 --daemon-pids "$(pids "$1")" --timeout-s 300 \
    --csv "$4" > "$4.out" 2> "$4.err" || { echo "$PROG: alltoall_bench failed on set $1, $2 B:" >&2; cat "$4.err" >&2; exit 1; }
}
# "rc_queue_pairs datagram_peers" per daemon of a set, one line.
queue_pairs() {
  for ((i = 0; i < NODES; i++)); do
    "$DIR/ohioctl" --socket "$(admin "$1" $i)" --json --timeout-ms 30000 status |
      jq -r '"\(.transport_counters.queue_pairs // 0)/\(.transport_counters.datagram_peers // 0)"'
  done | paste -sd' '
}

echo "# $PROG: $NODES nodes x $PPN ranks per node per set, algorithm $ALGORITHM, sizes $SIZES, $REPS runs per size and set"
echo "# guest: $(nproc) CPUs, kernel $(uname -r), RDMA devices: $(cd /sys/class/infiniband && echo *), load average $(cut -d' ' -f1-3 /proc/loadavg)"
RAILS=$("$DIR/ohioctl" --socket "$(admin rc 0)" --json status | jq -r '.transport_counters.rails | length')
for t in "${SETS[@]}"; do
  bench "$t" 1 2 "$DIR/warm-$t.csv"  # every set connects its nodes before anything is timed
  QP[$(set_index "$t")]=$(queue_pairs "$t")
  echo "# $t set (rc-pool ${POOL[$t]}): RC queue pairs/peers over UD per daemon: ${QP[$(set_index "$t")]}"
done
# The sets are what their names say: rc has N-1 RC queue pairs per rail and nothing over UD, ud
# none and every peer over UD, pool1 at most one per rail.
BAD=$(for t in "${SETS[@]}"; do
  for pair in ${QP[$(set_index "$t")]}; do
    rc=${pair%/*}; ud=${pair#*/}
    case "$t" in
      rc) [ "$rc" = $(( (NODES - 1) * RAILS )) ] && [ "$ud" = 0 ] || echo "rc: $pair" ;;
      pool1) [ "$rc" -le "$RAILS" ] && [ "$ud" -ge $(( NODES - 2 )) ] || echo "pool1: $pair" ;;
      ud) [ "$rc" = 0 ] && [ "$ud" = $(( NODES - 1 )) ] || echo "ud: $pair" ;;
    esac
  done
done)
[ -z "$BAD" ] || { echo "$PROG: a set's queue pairs are not what its pool allows: $BAD" >&2; exit 1; }

iterations_for() {
  if [ -n "$ITERATIONS" ]; then echo "$ITERATIONS"
  elif [ "$1" -le 4096 ]; then echo 200
  elif [ "$1" -le 65536 ]; then echo 40
  else echo 8; fi
}
RUNLOG="$DIR/runs.out"  # size set rep latency_us cpu_us_per_call ctx_per_call
: > "$RUNLOG"
START=$SECONDS
for m in "${SIZE_LIST[@]}"; do
  n=$(iterations_for "$m")
  for ((rep = 0; rep < REPS; rep++)); do
    for ((k = 0; k < 3; k++)); do
      t=${SETS[$(( (rep + k) % 3 ))]}
      csv="$DIR/bench-$m-$t-$rep.csv"
      bench "$t" "$m" "$n" "$csv"
      row=$(awk -F, -v a="$ALGORITHM" '$1 == a { print $4, $6, $7; exit }' "$csv")
      echo "$m $t $rep $row" >> "$RUNLOG"
      echo "# $m B $t run $rep: $row (µs, CPU µs/call, switches/call) [$(( SECONDS - START )) s]"
    done
  done
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v m="$1" -v t="$2" -v c="$3" '$1 == m && $2 == t { print $c }' "$RUNLOG" | median; }
echo
echo "## RC only, a pool of one RC queue pair, UD only: $NODES nodes x $PPN, $ALGORITHM, median of $REPS runs, $(( SECONDS - START )) s of runs"
echo
echo "RC queue pairs/peers over UD per daemon: rc ${QP[0]}; pool1 ${QP[1]}; ud ${QP[2]} (every daemon also has one UD queue pair per rail unless rc-pool is unlimited)."
echo
echo "| bytes per rank | rc µs | pool1 µs | ud µs | pool1/rc | ud/rc | rc CPU µs/call | pool1 CPU µs/call | ud CPU µs/call |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for m in "${SIZE_LIST[@]}"; do
  r=$(col "$m" rc 4); p=$(col "$m" pool1 4); u=$(col "$m" ud 4)
  printf '| %s | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f | %.0f | %.0f |\n' "$m" "$r" "$p" "$u" \
    "$(awk -v a="$p" -v b="$r" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
    "$(awk -v a="$u" -v b="$r" 'BEGIN { print (b > 0 ? a / b : 0) }')" \
    "$(col "$m" rc 5)" "$(col "$m" pool1 5)" "$(col "$m" ud 5)"
done
for t in "${SETS[@]}"; do
  echo "$t datagrams: $(for ((i = 0; i < NODES; i++)); do "$DIR/ohioctl" --socket "$(admin "$t" $i)" --json status |
    jq -r '"\(.transport_counters.datagrams_sent // 0) sent, \(.transport_counters.datagram_retransmissions // 0) again"'; done | paste -sd';')"
done
echo "# guest load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
