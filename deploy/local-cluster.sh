#!/bin/bash
# One machine as a cluster: starts K ohiod nodes (node0..node{K-1}) on this host and runs the
# alltoall benchmark across them, P rank processes per node: ohio with algorithms v1, v2 and v3
# against a flat pairwise alltoall over TCP between the rank processes (what an MPI library
# does), all measured in the same run, and that run repeated --runs times against the same
# daemons: per method and size the median latency over the runs, the ratio to flat, and what a
# call cost (CPU time and context switches of every rank process and every ohiod, packets each
# node's veth sent). Each size's rows are printed as soon as its runs are done (sizes in the
# outer loop, runs in the inner one). Writes them as CSV and plots latency against size (PNG) in
# --out. Then stops the daemons and removes everything it made (not --out).
#
# By default a short job, sized to finish within five minutes on a fresh 2-core machine, build
# included (README.md has the measured times): 8 sizes from 1 B to 1 MiB per rank, one per
# power of two from 2 KiB to 16 KiB, where the built-in selection table stops serving alltoall
# across nodes and ohio's lead over flat ends (docs/PERFORMANCE.md); 3 runs; 200 timed calls per
# method up to 4 KiB, 50 up to 64 KiB, 10 above; no daemon frames column (each of its samples is
# an ohioctl process, which cost more than a small size's calls), so ohioctl is not built.
# --full: the whole sweep, every power of two from 1 B to 1 MiB (21 sizes), 3 runs, the
# benchmark's own calls (500 up to 4 KiB, 100 up to 64 KiB, 50 above), the daemon frames column;
# several times longer. --sizes or --min-bytes/--max-bytes choose the sizes and time them as
# --full does.
#
# --netns (default as root): every node is a network namespace ohio-nodeI with a veth pair into
#   the bridge ohio-br0 (10.77.0.254) and the address 10.77.0.(I+1)/24; daemons and rank
#   processes run inside their node's namespace, so inter-node bytes cross the veths.
# --loopback: every node on 127.0.0.1 with its own ports.
#
# usage: deploy/local-cluster.sh [--full] [--nodes K (4)] [--ppn P (2)] [--netns|--loopback]
#                                [--sizes B,B,... | --min-bytes B (1) --max-bytes B (1048576):
#                                every power of two between]
#                                [--iterations N (timed calls per size and method; default above)]
#                                [--runs R (3)] [--out DIR (/tmp/ohio-bench/local-cluster)]
#                                [--algorithms LIST (v1,v2,v3; alltoallv: ohio_alltoallv of the same
#                                bytes)] [--stages] [--daemon-flags "FLAGS"]
# --stages: ranks run with OHIO_STAGE_TIMES=1 and the stage table (deploy/lib/stage-table.sh:
#   where a call's time goes, per size, averaged over ranks and runs) follows the results; with
#   more than one algorithm their calls of a size are averaged together.
# --daemon-flags: added to every ohiod's command line (after the script's own, so they win).
# Every ohiod is told its node's share of this host's CPUs, --cpus C/K for C CPUs (nproc) and
# K nodes: beyond 8 processes per CPU (16 or 32 nodes on 2 cores) neither daemons nor ranks
# spin, every wait sleeps (docs/OPERATIONS.md, "Spinning"); --daemon-flags "--cpus X"
# overrides it.
set -euo pipefail
cd "$(dirname "$0")/.."
NETNS_PROG=local-cluster.sh
. deploy/lib/netns-cluster.sh
. deploy/lib/bench-results.sh

NODES=4
PPN=2
MODE=
RUNS=3
OUT=/tmp/ohio-bench/local-cluster
FULL=0
SIZES=
MIN_BYTES=
MAX_BYTES=
ITERATIONS=
ALGORITHMS=v1,v2,v3
STAGES=0
DAEMON_FLAGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --ppn) PPN=$2; shift 2 ;;
    --netns) MODE=netns; shift ;;
    --loopback) MODE=loopback; shift ;;
    --full) FULL=1; shift ;;
    --sizes) SIZES=${2//,/ }; shift 2 ;;
    --min-bytes) MIN_BYTES=$2; shift 2 ;;
    --max-bytes) MAX_BYTES=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --algorithms) ALGORITHMS=$2; shift 2 ;;
    --stages) STAGES=1; shift ;;
    --daemon-flags) read -r -a DAEMON_FLAGS <<< "$2"; shift 2 ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    *) echo "local-cluster.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$NODES" in ''|*[!0-9]*) echo "--nodes needs a number" >&2; exit 2 ;; esac
case "$PPN" in ''|*[!0-9]*) echo "--ppn needs a number" >&2; exit 2 ;; esac
case "$RUNS" in ''|*[!0-9]*|0) echo "--runs needs a number >= 1" >&2; exit 2 ;; esac
[ -n "$OUT" ] || { echo "--out needs a directory" >&2; exit 2; }
for n in $SIZES $MIN_BYTES $MAX_BYTES $ITERATIONS; do
  case "$n" in *[!0-9]*|0*) echo "local-cluster.sh: sizes and --iterations need numbers >= 1, not '$n'" >&2; exit 2 ;; esac
done
if [ -n "$SIZES" ] && [ -n "$MIN_BYTES$MAX_BYTES" ]; then
  echo "local-cluster.sh: --sizes or --min-bytes/--max-bytes, not both" >&2
  exit 2
fi
# The sizes, and per size the timed calls per method ("" leaves it to alltoall_bench).
SHORT=0
if [ -n "$SIZES" ]; then
  :
elif [ "$FULL" = 1 ] || [ -n "$MIN_BYTES$MAX_BYTES" ]; then
  SIZES=$(awk -v lo="${MIN_BYTES:-1}" -v hi="${MAX_BYTES:-1048576}" 'BEGIN { for (m = lo; m <= hi; m *= 2) print m }')
  [ -n "$SIZES" ] || { echo "local-cluster.sh: no sizes between --min-bytes and --max-bytes" >&2; exit 2; }
else
  # Dense where the answer changes (above), sparse where it does not: every size costs a
  # benchmark start and its daemon counter samples whatever its calls.
  SIZES="1 512 2048 4096 8192 16384 65536 1048576"
  SHORT=1
fi
# The daemon frames column samples every daemon's counters with ohioctl before and after every
# window of an ohio method: a process start and a call into the daemon each time, which the short
# job leaves out.
DAEMON_FRAMES=1
TARGETS=(//daemon:ohiod //tests/bench:alltoall_bench //client:ohioctl)
if [ "$SHORT" = 1 ]; then
  DAEMON_FRAMES=0
  TARGETS=(//daemon:ohiod //tests/bench:alltoall_bench)
fi
calls_for() {  # calls_for BYTES: --iterations for one size, or nothing for the benchmark's default
  if [ -n "$ITERATIONS" ]; then echo "$ITERATIONS"
  elif [ "$SHORT" = 0 ]; then echo
  elif [ "$1" -le 4096 ]; then echo 200
  elif [ "$1" -le 65536 ]; then echo 50
  else echo 10
  fi
}
# 10.77.0.254 is the bridge, so node addresses stop at .253.
if [ "$NODES" -lt 2 ] || [ "$NODES" -gt 64 ] || [ "$PPN" -lt 1 ] || [ "$PPN" -gt 64 ]; then
  echo "local-cluster.sh: --nodes must be 2..64 and --ppn 1..64" >&2
  exit 2
fi
if [ -z "$MODE" ]; then
  if [ "$(id -u)" = 0 ] && ip netns list >/dev/null 2>&1; then MODE=netns; else MODE=loopback; fi
fi
if [ "$MODE" = netns ] && [ "$(id -u)" != 0 ]; then
  echo "local-cluster.sh: --netns needs root (or use --loopback)" >&2
  exit 2
fi

bash deploy/install-deps.sh --main-job
bazel build --curses=no "${TARGETS[@]}"
# Not the bazel-bin symlink: a concurrent build with another configuration (--config=asan)
# repoints it.
BAZEL_BIN=$(bazel info --curses=no bazel-bin 2>/dev/null)

# One run at a time of this script and deploy/mpi-compare.sh (same namespaces).
netns_lock 30

DIR=$(mktemp -d /tmp/ohio-cluster.XXXXXX)
# Private copies, so that a rebuild while this runs cannot swap the binaries under it.
cp "$BAZEL_BIN/daemon/ohiod" "$BAZEL_BIN/tests/bench/alltoall_bench" "$DIR/"
if [ "$DAEMON_FRAMES" = 1 ]; then cp "$BAZEL_BIN/client/ohioctl" "$DIR/"; fi
# Results stay after the run; only what an earlier run of this script wrote there is replaced.
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/runs/run*.csv "$OUT"/runs/run*.txt "$OUT"/runs/run*.err "$OUT/alltoall.csv" "$OUT/alltoall.png" "$OUT/size.csv"
DAEMON_PIDS=()
MUNGED_PID=
SAMPLER_PID=
BENCH_PID=

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  [ -n "$BENCH_PID" ] && stop_pid "$BENCH_PID"
  [ -n "$SAMPLER_PID" ] && stop_pid "$SAMPLER_PID"
  for pid in "${DAEMON_PIDS[@]}"; do stop_pid "$pid"; done
  [ -n "$MUNGED_PID" ] && stop_pid "$MUNGED_PID"
  if [ "$MODE" = netns ]; then
    teardown_network || rc=1
    if ! network_gone; then
      echo "local-cluster.sh: cleanup left something behind" >&2
      rc=1
    else
      echo "cleanup: namespaces ohio-node*, veths ohio-v* and bridge $BRIDGE removed; daemons stopped"
    fi
  else
    echo "cleanup: daemons stopped"
  fi
  rm -rf "$DIR"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Ports. In namespaces every node has its own port space; on loopback the nodes need distinct
# ports, taken from a range nothing listens on.
P_RANKS=$(( NODES * PPN ))
if [ "$MODE" = netns ]; then
  setup_network "$NODES"
  PEER_PORT_OF() { echo 7470; }
  DATA_PORT_OF() { echo 7471; }
  FLAT_BASE=7500
  HOST_OF() { node_ip "$1"; }
else
  in_use=$(ss -Htan | awk '{n = split($4, a, ":"); print a[n]}' | sort -u)
  BASE=
  for try in $(seq 27000 200 33000); do
    clash=0
    for ((p = try; p < try + 2 * NODES + P_RANKS; p++)); do
      if grep -qx "$p" <<<"$in_use"; then clash=1; break; fi
    done
    if [ $clash = 0 ]; then BASE=$try; break; fi
  done
  [ -n "$BASE" ] || { echo "local-cluster.sh: no free port range on 127.0.0.1" >&2; exit 1; }
  PEER_PORT_OF() { echo $(( BASE + 2 * $1 )); }
  DATA_PORT_OF() { echo $(( BASE + 2 * $1 + 1 )); }
  FLAT_BASE=$(( BASE + 2 * NODES ))
  HOST_OF() { echo 127.0.0.1; }
fi

# The emulated nodes share this host's CPUs: each counts its share as its own.
NODE_CPUS=$(node_cpus "$NODES")

PEERS=()
for ((i = 0; i < NODES; i++)); do PEERS+=(--peer "node$i=$(HOST_OF $i):$(PEER_PORT_OF $i)"); done

echo "local cluster: $NODES nodes x $PPN ranks, $MODE mode, in $DIR; each node counts $NODE_CPUS of $(nproc) CPUs"
start_munged "$DIR"
for ((i = 0; i < NODES; i++)); do
  ns=""
  if [ "$MODE" = netns ]; then ns=$(ns_name $i); fi
  start_ohiod $i "$DIR" "$(HOST_OF $i)" "$(PEER_PORT_OF $i)" "$(DATA_PORT_OF $i)" "$ns" "${PEERS[@]}" --cpus "$NODE_CPUS" \
    "${DAEMON_FLAGS[@]}"
done
for ((i = 0; i < NODES; i++)); do wait_ohiod_up $i "$DIR" "${DAEMON_PIDS[$i]}"; done

# Established TCP connections, split by what they carry: "data peer flat" for node $1 (its
# namespace), or for all nodes together on loopback.
count_connections() {
  local i=$1 ss_out
  if [ "$MODE" = netns ]; then
    ss_out=$(ip netns exec "$(ns_name $i)" ss -Htn state established)
  else
    ss_out=$(ss -Htnp state established)
  fi
  awk -v mode="$MODE" -v nodes="$NODES" -v base="${BASE:-0}" -v fb="$FLAT_BASE" -v fe=$(( FLAT_BASE + P_RANKS )) \
      -v dpid="${DAEMON_PIDS[$i]}" '
    function port(s,  a, n) { n = split(s, a, ":"); return a[n] + 0 }
    {
      l = port($3); r = port($4)
      if (mode == "netns") {
        if (l == 7471 || r == 7471) data++
        else if (l == 7470 || r == 7470) peer++
        else if ((l >= fb && l < fe) || (r >= fb && r < fe)) flat++
      } else {
        # Both ends of a loopback connection are here; the daemons own theirs by pid.
        isdata = 0; ispeer = 0
        for (n = 0; n < nodes; n++) {
          if (l == base + 2 * n + 1 || r == base + 2 * n + 1) isdata = 1
          if (l == base + 2 * n || r == base + 2 * n) ispeer = 1
        }
        mine = index($0, "pid=" dpid ",") > 0
        if (isdata && mine) data++
        else if (ispeer && mine) peer++
        else if ((l >= fb && l < fe) || (r >= fb && r < fe)) flat++
      }
    }
    END { printf "%d %d %d\n", data, peer, flat }' <<<"$ss_out"
}

# Samples while the benchmark runs (the flat baseline's connections live only as long as it
# does) and keeps the largest count per node. A sample runs ss once per node (with -p on
# loopback, which scans every process's descriptors): at 32 nodes it can take a good part of a
# second of the CPUs the benchmark measures, so the pause after one is 2 s or 40 times what it
# took, whichever is longer (the sampler busy at most 1/41 of the time).
sample_connections() {
  local i d p f samples=0 pause_us=2000000 began took
  declare -a maxd maxp maxf
  for ((i = 0; i < NODES; i++)); do maxd[$i]=0; maxp[$i]=0; maxf[$i]=0; done
  while :; do
    sleep "$(( pause_us / 1000000 )).$(printf '%06d' $(( pause_us % 1000000 )))"
    began=${EPOCHREALTIME/./}
    for ((i = 0; i < NODES; i++)); do
      read -r d p f < <(count_connections $i)
      if [ "$d" -gt "${maxd[$i]}" ]; then maxd[$i]=$d; fi
      if [ "$p" -gt "${maxp[$i]}" ]; then maxp[$i]=$p; fi
      if [ "$f" -gt "${maxf[$i]}" ]; then maxf[$i]=$f; fi
    done
    took=${EPOCHREALTIME/./}
    took=$(( 10#$took - 10#$began ))
    pause_us=$(( took * 40 > 2000000 ? took * 40 : 2000000 ))
    samples=$(( samples + 1 ))
    for ((i = 0; i < NODES; i++)); do echo "$i ${maxd[$i]} ${maxp[$i]} ${maxf[$i]} $samples"; done > "$DIR/during.tmp"
    mv "$DIR/during.tmp" "$DIR/during"
  done
}

link_bytes() {  # "rx tx" of the root side of node $1's veth, or of lo
  local dev=lo
  if [ "$MODE" = netns ]; then dev=$(veth_name "$1"); fi
  echo "$(cat /sys/class/net/$dev/statistics/rx_bytes) $(cat /sys/class/net/$dev/statistics/tx_bytes)"
}

# The root side of a veth receives what its namespace sends.
print_link_bytes() {
  local i rx tx
  for ((i = 0; i < NODES; i++)); do
    read -r rx tx < <(link_bytes $i)
    if [ "$MODE" = netns ]; then
      printf '  %-6s %s: %s bytes sent, %s bytes received\n' "node$i" "$(veth_name $i)" "$rx" "$tx"
    else
      printf '  lo (all nodes): %s bytes\n' "$tx"
      break
    fi
  done
}
declare -a RX0 TX0
for ((i = 0; i < NODES; i++)); do read -r RX0[$i] TX0[$i] < <(link_bytes $i); done
echo
echo "# link counters before the benchmark:"
print_link_bytes

commas() { local IFS=,; echo "$*"; }
SOCKETS=() HOSTS=() NAMESPACES=() ADMIN=()
for ((i = 0; i < NODES; i++)); do
  SOCKETS+=("$DIR/node$i.sock"); HOSTS+=("$(HOST_OF $i)"); NAMESPACES+=("$(ns_name $i)")
  ADMIN+=("$DIR/node$i.admin.sock")
done
BENCH=("$DIR/alltoall_bench" --sockets "$(commas "${SOCKETS[@]}")" --ppn "$PPN" --algorithms "$ALGORITHMS"
       --rank-hosts "$(commas "${HOSTS[@]}")" --flat-port-base "$FLAT_BASE" --timeout-s 30
       --daemon-pids "$(commas "${DAEMON_PIDS[@]}")")
if [ "$DAEMON_FRAMES" = 1 ]; then BENCH+=(--ohioctl "$DIR/ohioctl" --admin-sockets "$(commas "${ADMIN[@]}")"); fi
if [ "$MODE" = netns ]; then BENCH+=(--rank-netns "$(commas "${NAMESPACES[@]}")"); fi
echo
echo "\$ ${BENCH[*]} --min-bytes M --max-bytes M [--iterations N] --csv $OUT/runs/runR-M.csv"
echo "#   for M in: $SIZES; R = 1 .. $RUNS"
sample_connections &
SAMPLER_PID=$!
START=$SECONDS
if [ "$STAGES" = 1 ]; then export OHIO_STAGE_TIMES=1; fi
# bench_size M R: one run of the benchmark at M bytes per rank; its table, CSV and stderr in
# $OUT/runs/runR-M.*
bench_size() {
  local m=$1 run=$2 calls i
  local base=$OUT/runs/run$run-$m
  local args=(--min-bytes "$m" --max-bytes "$m")
  calls=$(calls_for "$m")
  if [ -n "$calls" ]; then args+=(--iterations "$calls"); fi
  # The benchmark stops itself when a rank stalls; this is the last resort.
  timeout --kill-after=10 900 "${BENCH[@]}" "${args[@]}" --csv "$base.csv" > "$base.txt" 2> "$base.err" &
  BENCH_PID=$!
  if wait "$BENCH_PID"; then BENCH_RC=0; else BENCH_RC=$?; fi
  BENCH_PID=
  if [ "$BENCH_RC" != 0 ]; then
    cat "$base.txt" "$base.err" >&2
    echo "local-cluster.sh: alltoall_bench run $run at $m bytes failed (exit $BENCH_RC); daemon logs:" >&2
    for ((i = 0; i < NODES; i++)); do echo "--- node$i" >&2; tail -20 "$DIR/node$i.log" >&2; done
    exit 1
  fi
}
FIRST=
for m in $SIZES; do
  for ((run = 1; run <= RUNS; run++)); do bench_size "$m" "$run"; done
  if [ -z "$FIRST" ]; then
    FIRST=$OUT/runs/run1-$m
    echo
    grep '^#' "$FIRST.txt" | grep -v '^# payload\|^# verified' || true
    # The daemon frame column is there only where ohioctl's counters have data_frames_sent.
    grep -h '^# .*data_frames_sent' "$FIRST.err" || true
    echo
    echo "### $NODES nodes x $PPN ranks, $MODE: median of $RUNS runs (each run interleaves every method per size);"
    echo "### every method and size verified; each size's rows as soon as its runs are done"
    echo
    bench_median "$OUT/size.csv" "v1=flat v2=flat v3=flat" "$OUT"/runs/run*-"$m".csv
    bench_print "$OUT/size.csv"
  else
    bench_median "$OUT/size.csv" "v1=flat v2=flat v3=flat" "$OUT"/runs/run*-"$m".csv
    bench_print "$OUT/size.csv" | tail -n +3
  fi
done
rm -f "$OUT/size.csv"
stop_pid "$SAMPLER_PID"
SAMPLER_PID=
# Each run's CSV, all sizes: what the medians below are taken over.
for ((run = 1; run <= RUNS; run++)); do
  awk 'FNR > 1 || NR == 1' $(for m in $SIZES; do echo "$OUT/runs/run$run-$m.csv"; done) > "$OUT/runs/run$run.csv"
done
bench_median "$OUT/alltoall.csv" "v1=flat v2=flat v3=flat" $(for ((run = 1; run <= RUNS; run++)); do echo "$OUT/runs/run$run.csv"; done)
PLOT=
if bench_plot "$OUT/alltoall.csv" "$OUT/alltoall.png" \
     "alltoall latency, $NODES nodes x $PPN ranks ($MODE), median of $RUNS runs"; then
  PLOT=$OUT/alltoall.png
fi
echo
# Every size's invocation reports its own payload; a run's is their sum.
awk '/^# verified calls\): / { mib += $(NF - 1) }
     END { printf "# payload each node sent to the others in each run (ohio and flat; timed, warm-up and\n# verified calls): %.1f MiB\n", mib }' \
  $(for m in $SIZES; do echo "$OUT/runs/run1-$m.txt"; done)
echo "# $RUNS runs x $(wc -w <<<"$SIZES") sizes in $(( SECONDS - START )) s"
if [ "$STAGES" = 1 ]; then
  echo
  echo "### where a call's time goes (OHIO_STAGE_TIMES=1): us per call, averaged over ranks and runs"
  echo "# daemon_* and peers_begun: when this node's daemon (and the latest peer) took that step, after the rank arrived;"
  echo "# trip: landed here minus begun on the sending node (one host, one clock)"
  echo
  bash deploy/lib/stage-table.sh "$OUT"/runs/run*-*.err
fi

echo
echo "# link counters after the benchmark:"
print_link_bytes
if [ "$MODE" = netns ]; then
  echo "# difference: bytes through each node's veth during the benchmark ($RUNS runs, all methods and calls, with"
  echo "# TCP/IP headers and ACKs):"
  printf '%-8s %-8s %16s %16s\n' node veth sent_MiB received_MiB
else
  echo "# difference: bytes through lo during the benchmark ($RUNS runs, every node's traffic, and anything else"
  echo "# on 127.0.0.1):"
  printf '%-8s %-8s %16s %16s\n' node link sent_MiB received_MiB
fi
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
for ((i = 0; i < NODES; i++)); do
  read -r rx tx < <(link_bytes $i)
  if [ "$MODE" = netns ]; then
    # The root side's rx is what the namespace sent.
    printf '%-8s %-8s %16s %16s\n' "node$i" "$(veth_name $i)" "$(mib $(( rx - RX0[i] )))" "$(mib $(( tx - TX0[i] )))"
  else
    printf '%-8s %-8s %16s %16s\n' all lo "$(mib $(( tx - TX0[i] )))" "$(mib $(( rx - RX0[i] )))"
    break
  fi
done

echo
EXPECT_FLAT=$(( (NODES - 1) * PPN * PPN ))
echo "# established TCP connections per node: ohio data connections (expected $(( NODES - 1 )) per node),"
echo "# ohio peer-service (gRPC) connections, and the flat baseline's (expected (K-1)*PPN^2 = $EXPECT_FLAT per node)"
if [ "$MODE" = netns ]; then
  echo "# counted with 'ss -tn state established' inside each namespace"
else
  echo "# counted with 'ss -tnp state established' on loopback: ohio's by daemon pid; the flat baseline's"
  echo "# rank processes are not told apart by node, so its row shows all endpoints / nodes"
fi
printf '%-8s %14s %14s %14s %14s\n' node ohio_data ohio_peer flat_during ohio_data_during
samples=0
for ((i = 0; i < NODES; i++)); do
  read -r d p f < <(count_connections $i)
  dd=- fd=-
  if [ -s "$DIR/during" ]; then
    read -r _ dd _ fd samples < <(awk -v n=$i '$1 == n' "$DIR/during")
    if [ "$MODE" = loopback ]; then fd=$(awk -v f="$fd" -v k="$NODES" 'BEGIN { printf "%g", f / k }'); fi
  fi
  printf '%-8s %14s %14s %14s %14s\n' "node$i" "$d" "$p" "$fd" "$dd"
done
echo "# ohio_data, ohio_peer: after the benchmark (daemons still up); *_during: largest count over $samples samples, 2 s or more apart, while it ran"
echo
echo "results: $OUT/alltoall.csv (medians, one row per method and size)"
if [ -n "$PLOT" ]; then echo "plot:    $PLOT (latency against bytes per rank, log-log)"; fi
echo "runs:    $OUT/runs/run1..$RUNS.csv (each run, all sizes); runR-M.txt, .csv and .err (run R at M bytes per rank)"
