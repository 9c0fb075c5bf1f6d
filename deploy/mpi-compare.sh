#!/bin/bash
# MPI_Alltoall under real MPI libraries, with and without ohio, on one emulated topology: the
# osu-style program tests/bench/mpi_alltoall_bench.c run by Open MPI alone, Open MPI + ohio
# (libohio_mpi_openmpi.so preloaded), MPICH alone and MPICH + ohio (libohio_mpi_mpich.so),
# interleaved and repeated (--runs, the order rotated each run); prints per variant and size the
# median over the runs of the latency and of what a call cost (CPU time and context switches of
# every rank and every ohiod, packets each node's veth sent), the ratios with / without ohio of
# the median latencies, and the established TCP connections per host. Writes the medians as CSV
# and plots latency against size (PNG) in --out. Then stops everything and removes everything
# it made (not --out).
#
# Multi-host (default): K nodes as network namespaces ohio-nodeI (10.77.0.(I+1)/24, veth into
#   the bridge ohio-br0 = 10.77.0.254, as deploy/local-cluster.sh), one ohiod per namespace.
#   The launchers reach the "hosts" through deploy/lib/netns-ssh.sh (an ssh stand-in), so every
#   rank runs in its node's namespace and gets OHIO_SOCKET = its node's daemon.
# --single-host: all ranks and one ohiod in one namespace (ohio-node0), shared memory only.
#
# usage: deploy/mpi-compare.sh [--nodes K (2)] [--ppn P (2)] [--single-host]
#          [--min-bytes B (1)] [--max-bytes B (65536)] [--runs R (3; --repeats R is the same)]
#          [--iterations N (timed calls per size: 40, 200 from 16 nodes)]
#          [--run-timeout S (per mpirun: 90, 300 from 16 nodes)] [--mpich-yield]
#          [--out DIR (/tmp/ohio-bench/mpi-compare-KxP, or -single-host)]
#          [--collective alltoall|alltoallv (alltoall; alltoallv: MPI_Alltoallv of the same bytes)]
#          [--mpi LIST (openmpi,mpich)] [--internode-algorithms LIST (none: each daemon's inter-node table)]
#          [--component] [--selection table|always (table)]
# --mpi: the MPI libraries to run, each alone and with ohio.
# --component: with Open MPI, one more variant, "ompi+component": ohio through Open MPI's
#   collective component coll/ohio (mca_coll_ohio.so through mca_base_component_path), nothing
#   preloaded; its ratio is to Open MPI alone, like the shim's ("ompi+ohio").
# --internode-algorithms pairwise,hypercube,direct: one ohio variant per inter-node algorithm instead of one
#   ("ompi+hypercube" ...), each forced for its job with OHIO_INTERNODE_ALGORITHM; "ohio" is the table's choice.
# --selection table: the ohio variants get what a user gets: the selection table the daemons
#   hold (the built-in one here) decides which calls ohio serves and which it hands to the MPI
#   library; every call must be one or the other, none handed back for another reason.
#   always: every call through ohio (OHIO_SELECTION=always), to measure ohio's own path.
# As root. Ratio columns: latency with ohio / without (above 1: ohio is slower).
# MPICH 4.0.2 never yields its core while it waits, so with more ranks than cores (here: 2
# cores) its calls take milliseconds. --mpich-yield preloads, into both MPICH variants, a tiny
# library (built here from the source below) whose ucp_worker_progress calls sched_yield()
# when nothing progressed: MPICH as it would behave if it yielded, not MPICH as shipped.
# MPI_COMPARE_KEEP=1 keeps the run directory (outputs, logs, every connection sample).
set -euo pipefail
cd "$(dirname "$0")/.."
NETNS_PROG=mpi-compare.sh
. deploy/lib/netns-cluster.sh
. deploy/lib/bench-results.sh
. deploy/lib/bazel-build.sh
ARGS="$*"

NODES=
PPN=2
SINGLE=0
MIN_BYTES=1
MAX_BYTES=65536
REPEATS=3
ITERATIONS=
RUN_TIMEOUT=
MPICH_YIELD=0
OUT=
COLLECTIVE=alltoall
MPIS=openmpi,mpich
INTERNODE_ALGORITHMS=
COMPONENT=0
SELECTION=table
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; shift 2 ;;
    --ppn) PPN=$2; shift 2 ;;
    --single-host) SINGLE=1; shift ;;
    --min-bytes) MIN_BYTES=$2; shift 2 ;;
    --max-bytes) MAX_BYTES=$2; shift 2 ;;
    --runs|--repeats) REPEATS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --iterations) ITERATIONS=$2; shift 2 ;;
    --run-timeout) RUN_TIMEOUT=$2; shift 2 ;;
    --mpich-yield) MPICH_YIELD=1; shift ;;
    --collective) COLLECTIVE=$2; shift 2 ;;
    --mpi) MPIS=$2; shift 2 ;;
    --internode-algorithms) INTERNODE_ALGORITHMS=$2; shift 2 ;;
    --component) COMPONENT=1; shift ;;
    --selection) SELECTION=$2; shift 2 ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "mpi-compare.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ "$SINGLE" = 1 ]; then
  if [ -n "$NODES" ] && [ "$NODES" != 1 ]; then echo "mpi-compare.sh: --single-host means --nodes 1" >&2; exit 2; fi
  NODES=1
fi
NODES=${NODES:-2}
case "$SELECTION" in table|always) ;; *) echo "mpi-compare.sh: --selection is table or always, not '$SELECTION'" >&2; exit 2 ;; esac
# From 16 emulated nodes, 40 calls per size measure neither library's steady state: short runs
# are mostly the slow first calls, Open MPI's far more than ohio's
# (docs/investigations/hypercube-at-32-nodes.md has the figures). More calls take longer: so does
# the timeout.
if [ "$NODES" -ge 16 ] 2>/dev/null; then  # (a non-number is refused just below)
  ITERATIONS=${ITERATIONS:-200}
  RUN_TIMEOUT=${RUN_TIMEOUT:-300}
fi
ITERATIONS=${ITERATIONS:-40}
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
for v in "$NODES" "$PPN" "$MIN_BYTES" "$MAX_BYTES" "$REPEATS" "$ITERATIONS" "$RUN_TIMEOUT"; do
  case "$v" in ''|*[!0-9]*) echo "mpi-compare.sh: numbers expected, got '$v'" >&2; exit 2 ;; esac
done
if [ "$SINGLE" = 0 ] && { [ "$NODES" -lt 2 ] || [ "$NODES" -gt 64 ]; }; then
  echo "mpi-compare.sh: --nodes must be 2..64 (or use --single-host)" >&2; exit 2
fi
if [ "$PPN" -lt 1 ] || [ "$PPN" -gt 64 ] || [ "$MIN_BYTES" -lt 1 ] || [ "$MAX_BYTES" -lt "$MIN_BYTES" ] || [ "$REPEATS" -lt 1 ] ||
   [ "$ITERATIONS" -lt 1 ] || [ "$RUN_TIMEOUT" -lt 5 ]; then
  echo "mpi-compare.sh: --ppn 1..64, 1 <= --min-bytes <= --max-bytes, --repeats, --iterations >= 1, --run-timeout >= 5" >&2; exit 2
fi
case "$COLLECTIVE" in
  alltoall) FUNC=MPI_Alltoall ;;
  alltoallv) FUNC=MPI_Alltoallv ;;
  *) echo "mpi-compare.sh: --collective alltoall or alltoallv" >&2; exit 2 ;;
esac
# The variants: each library alone ("ompi", "mpich"), then with ohio, once per inter-node algorithm asked for
# ("ompi+hypercube") or once with the daemons' own choice ("ompi+ohio").
VARIANTS=()
BASELINES=
IFS=, read -r -a mpi_list <<< "$MPIS"
IFS=, read -r -a internode_list <<< "${INTERNODE_ALGORITHMS:-ohio}"
for m in "${mpi_list[@]}"; do
  case "$m" in
    openmpi) lib=ompi ;;
    mpich) lib=mpich ;;
    *) echo "mpi-compare.sh: --mpi takes openmpi and/or mpich, got '$m'" >&2; exit 2 ;;
  esac
  VARIANTS+=("$lib")
  for l in "${internode_list[@]}"; do
    case "$l" in
      ohio|pairwise|hypercube|direct) ;;
      *) echo "mpi-compare.sh: --internode-algorithms takes pairwise, hypercube, direct (or ohio), got '$l'" >&2; exit 2 ;;
    esac
    VARIANTS+=("$lib+$l")
    BASELINES+="${BASELINES:+ }$lib+$l=$lib"
  done
  if [ "$lib" = ompi ] && [ "$COMPONENT" = 1 ]; then
    VARIANTS+=(ompi+component)
    BASELINES+="${BASELINES:+ }ompi+component=ompi"
  fi
done
if [ ${#VARIANTS[@]} = 0 ]; then echo "mpi-compare.sh: --mpi names no library" >&2; exit 2; fi
if [ "$(id -u)" != 0 ]; then echo "mpi-compare.sh: needs root (network namespaces)" >&2; exit 2; fi
RANKS=$(( NODES * PPN ))
if [ -z "$OUT" ]; then
  if [ "$SINGLE" = 1 ]; then OUT=/tmp/ohio-bench/mpi-compare-single-host; else OUT=/tmp/ohio-bench/mpi-compare-${NODES}x$PPN; fi
fi

bash deploy/install-deps.sh
TARGETS=(//daemon:ohiod //client:ohioctl //client:libohio_mpi_openmpi.so //client:libohio_mpi_mpich.so //tests/bench:all
         //client/openmpi_coll:mca_coll_ohio.so)
bazel_build_retrying mpi-compare.sh "${TARGETS[@]}"

# One run at a time of this script and deploy/local-cluster.sh (same namespaces).
netns_lock 120

DIR=$(mktemp -d /tmp/ohio-mpi-compare.XXXXXX)
DAEMON_PIDS=()
MUNGED_PID=
MPI_PID=

# Every process in our namespaces that is not a daemon: ranks or launcher daemons left by a run
# that was stopped. Stopped so that they cannot load the next run.
reap_namespaces() {
  local i p d keep
  for ((i = 0; i < NODES; i++)); do
    for p in $(ip netns pids "$(ns_name $i)" 2>/dev/null || true); do
      keep=0
      for d in "${DAEMON_PIDS[@]}"; do [ "$p" = "$d" ] && keep=1; done
      if [ $keep = 0 ] && kill -0 "$p" 2>/dev/null; then
        echo "mpi-compare.sh: stopping leftover process $p ($(cat "/proc/$p/comm" 2>/dev/null)) in $(ns_name $i)" >&2
        kill -KILL "$p" 2>/dev/null || true
      fi
    done
  done
}

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  [ -n "$MPI_PID" ] && stop_pid "$MPI_PID"
  stop_netns_cluster || rc=1
  if ! network_gone; then
    echo "mpi-compare.sh: cleanup left something behind" >&2
    rc=1
  else
    echo "cleanup: namespaces ohio-node*, veths ohio-v* and bridge $BRIDGE removed; daemons stopped"
  fi
  if [ -n "${MPI_COMPARE_KEEP:-}" ]; then echo "kept $DIR (MPI_COMPARE_KEEP)"; else rm -rf "$DIR"; fi
  exit $rc
}

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Private copies, so that a rebuild while this runs cannot swap the binaries under it.
cp "$BAZEL_BIN/daemon/ohiod" "$BAZEL_BIN/client/ohioctl" "$BAZEL_BIN/client/libohio_mpi_openmpi.so" "$BAZEL_BIN/client/libohio_mpi_mpich.so" \
   "$BAZEL_BIN/tests/bench/mpi_alltoall_bench_openmpi" "$BAZEL_BIN/tests/bench/mpi_alltoall_bench_mpich" "$DIR/"
cp deploy/lib/netns-ssh.sh "$DIR/netns-ssh.sh"
mkdir "$DIR/coll" && cp "$BAZEL_BIN/client/openmpi_coll/mca_coll_ohio.so" "$DIR/coll/"
OMPI_COMPONENTS="$DIR/coll:$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')"
MPICH_PRELOAD=
if [ "$MPICH_YIELD" = 1 ]; then
  cat > "$DIR/ucx_yield.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
/* ucp_worker_progress that gives the core away when it found nothing to do. */
unsigned ucp_worker_progress(void* worker) {
  static unsigned (*real)(void*);
  if (!real) real = (unsigned (*)(void*))dlsym(RTLD_NEXT, "ucp_worker_progress");
  unsigned n = real(worker);
  if (n == 0) sched_yield();
  return n;
}
EOF
  cc -O2 -shared -fPIC -o "$DIR/libucx_yield.so" "$DIR/ucx_yield.c" -ldl
  MPICH_PRELOAD="$DIR/libucx_yield.so"
fi
mkdir "$DIR/runs"
# Results stay after the run; only what an earlier run of this script wrote there is replaced.
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/runs/*.csv "$OUT/$COLLECTIVE.csv" "$OUT/$COLLECTIVE.png"

if [ "$SINGLE" = 1 ]; then TOPO="single host, $PPN ranks"; else TOPO="$NODES nodes x $PPN ranks"; fi
if [ "$MPICH_YIELD" = 1 ]; then TOPO="$TOPO, MPICH with the yield library"; fi
echo "mpi-compare: $TOPO ($RANKS ranks), $MIN_BYTES .. $MAX_BYTES bytes per rank, $ITERATIONS timed calls per size, $REPEATS runs, in $DIR"
# Each emulated node counts its share of this host's CPUs, as in deploy/local-cluster.sh.
start_netns_cluster "$NODES" "$DIR" --cpus "$(node_cpus "$NODES")"

# The launch commands. Multi-host: the launchers run in the root namespace and reach the hosts
# over the bridge through the ssh stand-in, which gives everything it starts on node I
# OHIO_SOCKET=$DIR/nodeI.sock; OHIO_SOCKET must then not come from the launcher's environment
# (Open MPI passes only what -x names; MPICH's hydra passes its whole environment, over what
# the stand-in set). Single host: everything inside ohio-node0, OHIO_SOCKET passed explicitly.
HOSTFILE=$DIR/hostfile
HYDRA_HOSTS=
for ((i = 0; i < NODES; i++)); do
  echo "$(node_ip $i) slots=$PPN" >> "$HOSTFILE"
  HYDRA_HOSTS+="${HYDRA_HOSTS:+,}$(node_ip $i):$PPN"
done
# Every run, with or without ohio, counts the daemons' CPU time: they are processes of the run.
# and the data frames their transports sent (ohioctl counters) give the daemon frames per call.
ADMIN_SOCKETS=()
for ((i = 0; i < NODES; i++)); do ADMIN_SOCKETS+=("$DIR/node$i.admin.sock"); done
BENCH_ARGS=("$MIN_BYTES" "$MAX_BYTES" "$ITERATIONS" "$(IFS=,; echo "${DAEMON_PIDS[*]}")" "$COLLECTIVE"
            "$DIR/ohioctl" "$(IFS=,; echo "${ADMIN_SOCKETS[*]}")")
# shellcheck disable=SC2054  # commas inside MCA values, not between array elements
mpi_command() {  # fills CMD for variant $1
  local v=$1
  CMD=(timeout --kill-after=5 "$RUN_TIMEOUT" env -u OHIO_SOCKET -u LD_PRELOAD)
  if [ "$SINGLE" = 1 ]; then CMD+=(ip netns exec "$(ns_name 0)"); else CMD+=("OHIO_NETNS_SOCKET_DIR=$DIR"); fi
  case "$v" in
    ompi*)
      CMD+=(mpirun.openmpi --allow-run-as-root -np "$RANKS" --mca pml ob1 -x "OHIO_BENCH_HOLD=$HOLD")
      if [ "$SINGLE" = 1 ]; then
        CMD+=(--oversubscribe --mca btl vader,self)
      else
        CMD+=(--hostfile "$HOSTFILE" --mca plm_rsh_agent "$DIR/netns-ssh.sh"
              --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24
              --mca btl tcp,vader,self --mca mpi_yield_when_idle 1)
      fi
      # --selection: the table's verdicts, or every call through ohio.
      if [ "$v" = ompi+component ]; then
        CMD+=(--mca mca_base_component_path "$OMPI_COMPONENTS" -x OHIO_STATS=1 -x "OHIO_SELECTION=$SELECTION")
        if [ "$SINGLE" = 1 ]; then CMD+=(-x "OHIO_SOCKET=$DIR/node0.sock"); fi
      elif [[ "$v" == ompi+* ]]; then
        CMD+=(-x "LD_PRELOAD=$DIR/libohio_mpi_openmpi.so" -x OHIO_STATS=1 -x "OHIO_SELECTION=$SELECTION")
        if [ "${v#*+}" != ohio ]; then CMD+=(-x "OHIO_INTERNODE_ALGORITHM=${v#*+}"); fi
        if [ "$SINGLE" = 1 ]; then CMD+=(-x "OHIO_SOCKET=$DIR/node0.sock"); fi
      fi
      CMD+=("$DIR/mpi_alltoall_bench_openmpi")
      ;;
    mpich*)
      CMD+=(mpiexec.hydra)
      if [ "$SINGLE" = 1 ]; then
        CMD+=(-launcher fork)
      else
        CMD+=(-launcher ssh -launcher-exec "$DIR/netns-ssh.sh" -hosts "$HYDRA_HOSTS" -localhost 10.77.0.254
              -genv UCX_NET_DEVICES veth0)
      fi
      CMD+=(-np "$RANKS" -genv OHIO_BENCH_HOLD "$HOLD")
      if [[ "$v" == mpich+* ]]; then
        CMD+=(-genv LD_PRELOAD "$DIR/libohio_mpi_mpich.so${MPICH_PRELOAD:+:$MPICH_PRELOAD}" -genv OHIO_STATS 1
              -genv OHIO_SELECTION "$SELECTION")
        if [ "${v#*+}" != ohio ]; then CMD+=(-genv OHIO_INTERNODE_ALGORITHM "${v#*+}"); fi
        if [ "$SINGLE" = 1 ]; then CMD+=(-genv OHIO_SOCKET "$DIR/node0.sock"); fi
      fi
      if [ "$v" = mpich ] && [ -n "$MPICH_PRELOAD" ]; then CMD+=(-genv LD_PRELOAD "$MPICH_PRELOAD"); fi
      CMD+=("$DIR/mpi_alltoall_bench_mpich")
      ;;
  esac
  CMD+=("${BENCH_ARGS[@]}")
}

# Established TCP connections in every namespace, one line per node:
#   "node ohio_data ohio_peer ranks_other_hosts ranks_same_host other"
# A connection counts for a host if one of its ends is there. ohio_data / ohio_peer: ohiod's data
# port (7471) and peer service (7470). ranks_*: both ends owned by rank processes (found by
# joining every namespace's sockets; an end shared with a launcher process does not count).
# other: everything else (launcher daemons to mpirun/mpiexec, ranks to their local launcher).
# The raw ss lines are appended to $1.
count_connections() {
  local i
  for ((i = 0; i < NODES; i++)); do
    ip netns exec "$(ns_name $i)" ss -Htnp state established 2>/dev/null | sed "s/^/$i /" || true
  done | tee -a "$1" | awk -v nodes="$NODES" '
    function norm(a) { sub(/^\[::ffff:/, "", a); sub(/\]:/, ":", a); return a }
    function key(ns, a) { return (a ~ /^(127\.|\[::1\])/ ? ns "/" a : a) }
    function port(a,  p, n) { n = split(a, p, ":"); return p[n] + 0 }
    {
      ns = $1; l = norm($4); p = norm($5); users = ""
      for (f = 6; f <= NF; f++) users = users $f
      kind = ""; s = users
      while (match(s, /\("[^"]*"/)) {
        name = substr(s, RSTART + 2, RLENGTH - 3); s = substr(s, RSTART + RLENGTH)
        if (name ~ /^mpi_alltoall/) { if (kind == "") kind = "rank" }
        else if (name == "ohiod") kind = "ohiod"
        else kind = "other"
      }
      if (kind == "") kind = "other"
      n++; NS[n] = ns; LK[n] = key(ns, l); PK[n] = key(ns, p); LP[n] = port(l); PP[n] = port(p)
      owner[LK[n]] = kind; where[LK[n]] = ns
    }
    END {
      for (i = 1; i <= n; i++) {
        if (LP[i] == 7471 || PP[i] == 7471) c = "data"
        else if (LP[i] == 7470 || PP[i] == 7470) c = "peer"
        else if (owner[LK[i]] == "rank" && (PK[i] in owner) && owner[PK[i]] == "rank") c = (where[PK[i]] == NS[i] ? "rlocal" : "rremote")
        else c = "other"
        id = LK[i] < PK[i] ? LK[i] " " PK[i] : PK[i] " " LK[i]
        if (!((NS[i], id) in seen)) { seen[NS[i], id] = 1; cnt[NS[i], c]++ }
      }
      for (j = 0; j < nodes; j++)
        printf "%d %d %d %d %d %d\n", j, cnt[j, "data"], cnt[j, "peer"], cnt[j, "rremote"], cnt[j, "rlocal"], cnt[j, "other"]
    }'
}

# Starts CMD with output into $DIR/runs/$1.{out,err} and watches it until it ends: samples the
# connections (count_connections, appended to $DIR/runs/$1.conn) once, when the benchmark holds
# before MPI_Finalize after its last size (it creates $HOLD and waits until it is removed,
# OHIO_BENCH_HOLD): the connections of every size are still open then, and no timed call is
# under way. A sample is an `ip netns exec ... ss -p` per node, each scanning every process's
# descriptors: at 32 nodes one takes seconds of the two CPUs, and sampled while the runs ran it
# fell in the timed windows of the sizes after the first (more for the ohio variants, whose
# ohiods have more descriptors to scan). MPICH 4.0.2 over UCX's tcp transport can hang
# in MPI_Finalize (one rank flushing its endpoints while the others wait in the launcher's
# barrier); a job that has printed every result (and, with ohio, its statistics) and is still
# there $FINALIZE_GRACE s later is stopped and marked. Sets RC and HUNG.
# Launchers tear 32 hosts down more slowly than 2: the grace grows with the nodes.
FINALIZE_GRACE=$(( 5 + NODES / 2 ))
HOLD="$DIR/held-before-finalize"
run_watched() {
  local tag=$1 want_stats=$2 out="$DIR/runs/$1.out" err="$DIR/runs/$1.err" lines n done_at=0 now
  rm -f "$HOLD"
  : > "$out"
  : > "$err"
  "${CMD[@]}" > "$out" 2> "$err" &
  MPI_PID=$!
  HUNG=0
  while kill -0 "$MPI_PID" 2>/dev/null; do
    mapfile -t lines < "$out"
    n=0
    for l in "${lines[@]}"; do [[ "$l" =~ ^[0-9]+\ [0-9.]+(\ |$) ]] && n=$(( n + 1 )); done
    now=${EPOCHREALTIME/./}
    now=$(( 10#$now ))
    if [ -e "$HOLD" ]; then
      count_connections "$DIR/runs/$tag.ss" >> "$DIR/runs/$tag.conn"
      rm -f "$HOLD"
      done_at=0  # the grace for MPI_Finalize starts once it is let go
      continue
    fi
    if [ $n = "$SIZES" ] && { [ "$want_stats" = 0 ] || grep -q '^ohio: .* served by ohiod' "$err"; }; then
      [ $done_at = 0 ] && done_at=$now
      if [ $(( now - done_at )) -ge $(( FINALIZE_GRACE * 1000000 )) ]; then
        HUNG=1
        stop_pid "$MPI_PID"
        break
      fi
    fi
    sleep 0.05
  done
  if wait "$MPI_PID"; then RC=0; else RC=$?; fi
  MPI_PID=
}

veth_sent() {  # bytes node $1 has sent through its veth (the root side receives them)
  cat "/sys/class/net/$(veth_name "$1")/statistics/rx_bytes"
}

group_lines() {  # groups node $1's daemon has created for all RANKS ranks, PPN of them on it
  grep -c "created for $RANKS ranks, $PPN on this node" "$DIR/node$1.log" || true
}

SIZES=$(awk -v a="$MIN_BYTES" -v m="$MAX_BYTES" 'BEGIN { for (b = a; b <= m; b *= 2) n++; print n }')
# Calls per rank and size that go through $FUNC: warm-up (n/10 + 2) and timed (n).
EXPECT_SERVED=$(( RANKS * SIZES * (ITERATIONS + ITERATIONS / 10 + 2) ))
FAILED=0
HANGS=0
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
START=$SECONDS
for ((r = 0; r < REPEATS; r++)); do
  for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
    v=${VARIANTS[$(( (k + r) % ${#VARIANTS[@]} ))]}   # rotated each repeat
    tag="${v/+/_}.$r"
    mpi_command "$v"
    if [ "$r" = 0 ]; then echo "\$ ${CMD[*]}"; fi
    declare -a g0=() s0=()
    for ((i = 0; i < NODES; i++)); do g0[i]=$(group_lines $i); s0[i]=$(veth_sent $i); done
    t0=$SECONDS
    want_stats=0
    [[ "$v" == *+* ]] && want_stats=1
    run_watched "$tag" $want_stats
    rc=$RC
    reap_namespaces
    sent=0
    for ((i = 0; i < NODES; i++)); do sent=$(( sent + $(veth_sent $i) - s0[i] )); done
    echo "$sent" > "$DIR/runs/$tag.veth"
    nlines=$(grep -cE '^[0-9]+ [0-9.]+( |$)' "$DIR/runs/$tag.out" || true)
    note="ok"
    if [ $HUNG = 1 ] && [ "$nlines" = "$SIZES" ]; then
      rc=0
      note="ok (hung in MPI_Finalize after its last result; stopped after ${FINALIZE_GRACE} s)"
      HANGS=$(( HANGS + 1 ))
    fi
    if [ "$rc" != 0 ] || [ "$nlines" != "$SIZES" ]; then
      note="FAILED (exit $rc$([ "$rc" != 124 ] || echo ": timed out after ${RUN_TIMEOUT}s"), $nlines of $SIZES sizes)"
      FAILED=1
      mv "$DIR/runs/$tag.out" "$DIR/runs/$tag.failed"
      tail -5 "$DIR/runs/$tag.err" | sed 's/^/    /' >&2
    elif [[ "$v" == *+* ]]; then
      read -r served fell < <(sed -nE "s/^ohio: ([0-9]+) $FUNC calls served by ohiod, ([0-9]+) handed back.*/\1 \2/p" \
                               "$DIR/runs/$tag.err" | head -1) || true
      # Calls the selection table handed to the library are what --selection table asks for.
      by_table=$(sed -nE "s/^ohio:   of those, ([0-9]+) $FUNC calls handed to the MPI library by the selection table.*/\1/p" \
                   "$DIR/runs/$tag.err" | head -1)
      if [ "$SELECTION" = table ] && [ -n "$served" ] && [ -n "$fell" ]; then
        served=$(( served + ${by_table:-0} )); fell=$(( fell - ${by_table:-0} ))
      fi
      groups_ok=1
      for ((i = 0; i < NODES; i++)); do [ "$(group_lines $i)" -gt "${g0[$i]}" ] || groups_ok=0; done
      note="$note, ohio served ${served:-?} of $EXPECT_SERVED calls$([ "$SELECTION" = always ] || echo " (${by_table:-0} of them handed to the library by the selection table)"), ${fell:-?} handed back"
      if [ "${served:-0}" != "$EXPECT_SERVED" ] || [ "${fell:-1}" != 0 ] || [ $groups_ok = 0 ]; then
        note="NOT SERVED BY OHIO as expected: ${served:-no} served, ${fell:-no} handed back (expected $EXPECT_SERVED and 0); every daemon saw the group: $groups_ok"
        FAILED=1
        mv "$DIR/runs/$tag.out" "$DIR/runs/$tag.failed"
        grep '^ohio' "$DIR/runs/$tag.err" | sed 's/^/    /' >&2 || true
      else
        echo "$served" > "$DIR/runs/$tag.served"
      fi
    elif grep -q '^ohio:' "$DIR/runs/$tag.err"; then
      note="ohio output in a run without ohio"; FAILED=1
    fi
    printf '  [%d/%d] %-11s %3d s  %s\n' $(( r + 1 )) "$REPEATS" "$v" $(( SECONDS - t0 )) "$note"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); $(( SECONDS - START )) s for the $(( REPEATS * ${#VARIANTS[@]} )) runs; $HANGS of them hung in MPI_Finalize after their last result"

# Every successful run as CSV (the program's columns: bytes avg_us cpu_us_per_call
# ctx_switches_per_call frames_per_call_per_node daemon_frames_per_call_per_node), then the
# medians over the runs.
for f in "$DIR"/runs/*.out; do
  [ -e "$f" ] || continue
  tag=$(basename "$f" .out)
  awk -v v="${tag%.*}" -v calls="$ITERATIONS" 'BEGIN {
      sub(/_/, "+", v)
      print "method,bytes,calls,latency_us,ratio,cpu_us_per_call,ctx_switches_per_call,frames_per_call_per_node,daemon_frames_per_call_per_node"
    }
    function col(i) { return ($i == "" ? "-" : $i) }
    /^[0-9]+ [0-9.]+( |$)/ { printf "%s,%s,%s,%s,-,%s,%s,%s,%s\n", v, $1, calls, $2, col(3), col(4), col(5), col(6) }' \
    "$f" > "$OUT/runs/$tag.csv"
done
echo
echo "### $TOPO: $FUNC, median of $REPEATS runs (each run: latency = the slowest rank's mean over $ITERATIONS calls)"
echo
echo "CPU time and context switches: every rank and every ohiod (in every variant), in the timed"
echo "window; frames: packets each node's veth0 sent in it (with launcher traffic; one host: no"
echo "traffic crosses it); daemon frames: data frames the ohiods' transports sent (ohioctl counters),"
echo "per node. Ratio: with ohio / without."
echo
CSVS=()
for v in "${VARIANTS[@]}"; do   # in this order, which bench_median keeps
  for f in "$OUT"/runs/"${v/+/_}".*.csv; do [ -e "$f" ] && CSVS+=("$f"); done
done
PLOT=
if [ ${#CSVS[@]} -gt 0 ]; then
  bench_median "$OUT/$COLLECTIVE.csv" "$BASELINES" "${CSVS[@]}"
  bench_print "$OUT/$COLLECTIVE.csv"
  if bench_plot "$OUT/$COLLECTIVE.csv" "$OUT/$COLLECTIVE.png" "$FUNC latency, $TOPO, median of $REPEATS runs"; then
    PLOT=$OUT/$COLLECTIVE.png
  fi
fi
runs_done() { ls "$DIR/runs/${1/+/_}".*.out 2>/dev/null | wc -l; }
echo
echo "Successful runs: $(for v in "${VARIANTS[@]}"; do printf '%s %s/%s  ' "$v" "$(runs_done "$v")" "$REPEATS"; done)"
echo "ohio served (OHIO_STATS=1): $(for v in "${VARIANTS[@]}"; do [[ "$v" == *+* ]] || continue
  printf '%s %s| ' "$v" "$(cat "$DIR"/runs/"${v/+/_}".*.served 2>/dev/null | tr '\n' ' ')"; done)calls per run (all $EXPECT_SERVED expected), 0 handed back"

echo
echo "### $TOPO: established TCP connections per host (before MPI_Finalize, largest over the runs)"
echo
echo "Sampled with \`ip netns exec ohio-nodeI ss -Htnp state established\` once per run, after its last"
echo "size, while the benchmark waits before MPI_Finalize (every connection it opened is still open, and"
echo "no timed call is under way); a connection is a rank<->rank one when both its ends belong to rank"
echo "processes. Per host, host0/host1/..."
echo
EXPECT_MPI=$(( (NODES - 1) * PPN * PPN ))
echo "| variant | MPI rank<->rank, other hosts (expected (N-1)·PPN² = $EXPECT_MPI) | rank<->rank, same host | ohiod data (expected N-1 = $(( NODES - 1 ))) | ohiod peer (gRPC) | launcher & other | samples | MiB sent per host over the veths, per run |"
echo "| --- | --- | --- | --- | --- | --- | ---: | ---: |"
for v in "${VARIANTS[@]}"; do
  files=("$DIR"/runs/"${v/+/_}".*.conn)
  [ -e "${files[0]}" ] || continue
  cols=$(cat "${files[@]}" | awk -v nodes="$NODES" '
    { for (c = 2; c <= 6; c++) if ($c + 0 > m[$1, c] + 0) m[$1, c] = $c; if ($1 == 0) s++ }
    END {
      out = ""
      split("4 5 2 3 6", order, " ")   # rank<->rank other hosts, same host, ohio data, ohio peer, other
      for (o = 1; o <= 5; o++) {
        c = order[o]
        cell = ""
        for (j = 0; j < nodes; j++) cell = cell (j ? "/" : "") (m[j, c] + 0)
        out = out " | " cell
      }
      printf "%s | %d", out, s
    }')
  mib=$(cat "$DIR"/runs/"${v/+/_}".*.veth | awk -v nodes="$NODES" '{ t += $1; n++ } END { printf "%.1f", t / n / nodes / 1048576 }')
  [ "$SINGLE" = 1 ] && mib="-"
  echo "| $v$cols | $mib |"
done
echo
echo "command: deploy/mpi-compare.sh $ARGS"
if [ -e "$OUT/$COLLECTIVE.csv" ]; then
  echo "results: $OUT/$COLLECTIVE.csv (medians, one row per variant and size)"
  if [ -n "$PLOT" ]; then echo "plot:    $PLOT (latency against bytes per rank, log-log)"; fi
  echo "runs:    $OUT/runs/VARIANT.R.csv (each run's own numbers)"
fi
if [ "$FAILED" != 0 ]; then
  echo "mpi-compare.sh: some runs failed or were not served by ohio as expected (see above)" >&2
  exit 1
fi
