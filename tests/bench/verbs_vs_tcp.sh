#!/bin/bash
# verbs vs tcp: ohio's two data transports in the same Soft-RoCE guest, same sizes, ratio printed.
#
# Runs INSIDE the guest of tests/vm (real verbs over rxe0/rxe1). In one invocation it starts K
# ohiods with `--transport verbs` and K with `--transport tcp`, all on 127.0.0.1 with their own
# ports and sockets, and runs alltoall_bench (multi-node mode: --sockets, --ppn) against each set
# with the same ranks per node, algorithm(s) and calls. One bench run per size and set; for each
# size the two sets alternate (verbs tcp, tcp verbs, verbs tcp, ...), REPS runs each, and the
# table shows the median per set, so that drift on the emulated CPUs hits both alike. Each bench
# run also times its own flat pairwise TCP alltoall between the rank processes (no daemon): its
# column in the verbs and in the tcp runs shows how much the machine itself drifted.
# The transports are checked, not assumed: `ohioctl --json status` of every daemon must report
# the transport asked for; during verbs runs the verbs daemons must count RDMA puts and the rxe
# devices' own packet counters must move, during tcp runs they must not.
#
# From the host (builds, snapshots the binaries, boots the guest and runs this script in it):
#   bash tests/bench/verbs_vs_tcp.sh --vm [OPTIONS]
# which is
#   OHIO_VM_TIMEOUT=3600 tests/vm/rxe_guest.sh bash tests/bench/verbs_vs_tcp.sh --bin SNAPSHOT [OPTIONS]
#
# Options:
#   --nodes K        daemons per set (2..8, default 2)
#   --ppn P          rank processes per node (default 2)
#   --sizes LIST     bytes per rank, comma-separated (default 1,64,1024,16384,262144,1048576,4194304)
#   --algorithms L   ohio algorithms, comma-separated, one group each (default v3)
#   --reps R         bench runs per size and set, alternating (default 5; the median is shown)
#   --iterations N   timed calls per size, method and run (default 400 up to 1 KiB, 100 up to
#                    16 KiB, 16 up to 256 KiB, 8 up to 1 MiB, 4 above). Every bench run makes
#                    fresh groups, whose segments the verbs daemons register in the background
#                    (seconds here): until then puts go through bounce buffers, so short runs of
#                    small sizes would measure mostly that path. The table counts them.
#   --rounds N       interleaved rounds inside one bench run (default 2)
#   --spin-us U      ohiod --spin-us (default 50); ranks get OHIO_SPIN_US=20. Both bounded:
#                    nothing busy-waits longer than that before sleeping
#   --bin DIR        where ohiod, ohioctl and alltoall_bench are (default: bazel-bin/...)
#   --keep DIR       copy bench outputs, status JSON and daemon logs to DIR at the end (from the
#                    guest: DIR must be shared read-write; --vm does that)
#   --vm             host side: build, then run all this in a fresh guest (OHIO_VM_TIMEOUT,
#                    default here 3600 s); --no-build skips the build
#
# Needs jq in the guest (python3 takes ~20 s to start there). Timings are microseconds per
# alltoall call, averaged over calls and ranks (alltoall_bench); results: docs/investigations/verbs-vs-tcp-on-soft-roce.md.
# Soft-RoCE is RDMA in software on emulated CPUs: the numbers say nothing about a real HCA.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/../.."
PROG=verbs_vs_tcp.sh

NODES=2
PPN=2
SIZES=1,64,1024,16384,262144,1048576,4194304
ALGORITHMS=v3
REPS=5
ITERATIONS=
ROUNDS=2
SPIN_US=50
BIN=
KEEP=
VM=0
BUILD=1
PASS=()  # the options a --vm run hands on to the guest
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) NODES=$2; PASS+=("$1" "$2"); shift 2 ;;
    --ppn) PPN=$2; PASS+=("$1" "$2"); shift 2 ;;
    --sizes) SIZES=$2; PASS+=("$1" "$2"); shift 2 ;;
    --algorithms) ALGORITHMS=$2; PASS+=("$1" "$2"); shift 2 ;;
    --reps) REPS=$2; PASS+=("$1" "$2"); shift 2 ;;
    --iterations) ITERATIONS=$2; PASS+=("$1" "$2"); shift 2 ;;
    --rounds) ROUNDS=$2; PASS+=("$1" "$2"); shift 2 ;;
    --spin-us) SPIN_US=$2; PASS+=("$1" "$2"); shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --vm) VM=1; shift ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
number() { case "$2" in ''|*[!0-9]*) echo "$PROG: $1 needs a number, got '$2'" >&2; exit 2 ;; esac; }
number --nodes "$NODES"; number --ppn "$PPN"; number --reps "$REPS"; number --rounds "$ROUNDS"
number --spin-us "$SPIN_US"
[ -z "$ITERATIONS" ] || number --iterations "$ITERATIONS"
if [ "$NODES" -lt 2 ] || [ "$NODES" -gt 8 ] || [ "$PPN" -lt 1 ] || [ "$PPN" -gt 16 ] || [ "$REPS" -lt 1 ]; then
  echo "$PROG: --nodes must be 2..8, --ppn 1..16, --reps at least 1" >&2
  exit 2
fi
IFS=, read -r -a SIZE_LIST <<<"$SIZES"
IFS=, read -r -a ALGO_LIST <<<"$ALGORITHMS"
for s in "${SIZE_LIST[@]}"; do number --sizes "$s"; done
for a in "${ALGO_LIST[@]}"; do
  case "$a" in v1|v2|v3) ;; *) echo "$PROG: unknown algorithm '$a' (v1, v2, v3)" >&2; exit 2 ;; esac
done

# ------------------------------------------------------------------------------------------------
# Host side: build, snapshot the binaries (a rebuild while the guest runs must not swap them),
# boot the guest and run this script in it.
# ------------------------------------------------------------------------------------------------
if [ "$VM" = 1 ]; then
  if [ "$BUILD" = 1 ]; then
    bazel build --curses=no //daemon:ohiod //client:ohioctl //tests/bench:alltoall_bench
  fi
  # Not the bazel-bin symlink: a build with another configuration (--config=asan) repoints it.
  [ -n "$BIN" ] || BIN=$(bazel info --curses=no bazel-bin 2>/dev/null)
  SNAP=$(mktemp -d /tmp/ohio-vvt-bin.XXXXXX)
  trap 'rm -rf "$SNAP"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  cp "$BIN/daemon/ohiod" "$BIN/client/ohioctl" "$BIN/tests/bench/alltoall_bench" "$SNAP/"
  GUEST=(bash tests/bench/verbs_vs_tcp.sh --bin "$SNAP" "${PASS[@]}")
  if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP"
    KEEP=$(readlink -f "$KEEP")
    GUEST+=(--keep "$KEEP")
    export OHIO_VM_RW="${OHIO_VM_RW:+$OHIO_VM_RW:}$KEEP"
  fi
  export OHIO_VM_TIMEOUT=${OHIO_VM_TIMEOUT:-3600}
  echo "# host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %T UTC')"
  echo "# binaries from $BIN, commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)$(
    [ -z "$(git status --porcelain -- daemon client proto tests/bench 2>/dev/null)" ] || echo " with uncommitted changes")"
  echo "\$ OHIO_VM_TIMEOUT=$OHIO_VM_TIMEOUT tests/vm/rxe_guest.sh ${GUEST[*]}"
  rc=0
  tests/vm/rxe_guest.sh "${GUEST[@]}" || rc=$?
  exit $rc
fi

# ------------------------------------------------------------------------------------------------
# In the guest.
# ------------------------------------------------------------------------------------------------
shopt -s nullglob
RXE_COUNTERS=(/sys/class/infiniband/*/ports/*/hw_counters/sent_pkts)
shopt -u nullglob
if [ ${#RXE_COUNTERS[@]} -eq 0 ]; then
  echo "$PROG: no RDMA device with packet counters here; run it in the Soft-RoCE guest:" >&2
  echo "  bash tests/bench/verbs_vs_tcp.sh --vm   (or tests/vm/rxe_guest.sh bash $0 ...)" >&2
  exit 2
fi
command -v jq >/dev/null || { echo "$PROG: needs jq (apt-get install jq)" >&2; exit 2; }
if [ -z "$BIN" ]; then
  BIN=$(readlink -f bazel-bin) || { echo "$PROG: no bazel-bin; give --bin" >&2; exit 2; }
fi
for f in daemon/ohiod client/ohioctl tests/bench/alltoall_bench; do
  [ -x "$BIN/$f" ] || [ -x "$BIN/$(basename $f)" ] || { echo "$PROG: no $f under $BIN" >&2; exit 2; }
done
ulimit -l unlimited 2>/dev/null || true

DIR=$(mktemp -d /tmp/ohio-vvt.XXXXXX)
# Private copies: the guest reads the host's files, which a rebuild there could replace mid-run.
for f in daemon/ohiod client/ohioctl tests/bench/alltoall_bench; do
  if [ -x "$BIN/$f" ]; then cp "$BIN/$f" "$DIR/"; else cp "$BIN/$(basename $f)" "$DIR/"; fi
done
SETS=(verbs tcp)
declare -A PIDS        # set,i -> pid
BENCH_PID=

. deploy/lib/processes.sh   # wait_gone, stop_pid
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  [ -n "$BENCH_PID" ] && stop_pid "$BENCH_PID" 15
  for k in "${!PIDS[@]}"; do stop_pid "${PIDS[$k]}" 15; done
  if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP" && cp -r "$DIR"/*.log "$DIR"/*.out "$DIR"/*.err "$DIR"/*.json "$KEEP/" 2>/dev/null
  fi
  rm -rf "$DIR"
  echo "# cleanup: daemons stopped, $DIR removed"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Ports: two per daemon (peer service, data), a range nothing listens on.
in_use=$(ss -Htan | awk '{n = split($4, a, ":"); print a[n]}' | sort -u)
BASE=
for try in $(seq 27000 100 33000); do
  clash=0
  for ((p = try; p < try + 4 * NODES; p++)); do
    if grep -qx "$p" <<<"$in_use"; then clash=1; break; fi
  done
  if [ $clash = 0 ]; then BASE=$try; break; fi
done
[ -n "$BASE" ] || { echo "$PROG: no free port range on 127.0.0.1" >&2; exit 1; }
set_index() { [ "$1" = verbs ] && echo 0 || echo 1; }
peer_port() { echo $(( BASE + 2 * ($(set_index "$1") * NODES + $2) )); }
data_port() { echo $(( $(peer_port "$1" "$2") + 1 )); }
sock() { echo "$DIR/$1$2.sock"; }
admin() { echo "$DIR/$1$2.admin.sock"; }

# --auth none: this measures the data path, which authentication does not touch (it costs a
# munged round trip per peer call and data connection, at setup), and needs no munged in the guest.
start_set() {  # set: K daemons node0..node{K-1} (names are per set: the sets never meet)
  local t=$1 i peers=()
  for ((i = 0; i < NODES; i++)); do peers+=(--peer "node$i=127.0.0.1:$(peer_port "$t" $i)"); done
  for ((i = 0; i < NODES; i++)); do
    "$DIR/ohiod" --node-name "node$i" --socket "$(sock "$t" $i)" --admin-socket "$(admin "$t" $i)" \
      --listen 127.0.0.1 --advertise 127.0.0.1 --peer-port "$(peer_port "$t" $i)" --data-port "$(data_port "$t" $i)" \
      --transport "$t" --spin-us "$SPIN_US" --timeout-ms 120000 --auth none "${peers[@]}" 2> "$DIR/$t$i.log" &
    PIDS[$t,$i]=$!
    echo "  $t node$i: ohiod pid $! (--transport $t), peer port $(peer_port "$t" $i), data port $(data_port "$t" $i)"
  done
}
# set i: until the daemon says its control socket is ready and its admin socket answers. No
# python here: in the guest, python3 takes ~20 s to start (emulated CPU, files over 9p).
wait_up() {
  local t=$1 i=$2 deadline=$(( SECONDS + 180 ))
  until [ -S "$(sock "$t" "$i")" ] && grep -q "control socket .* ready" "$DIR/$t$i.log" &&
        "$DIR/ohioctl" --socket "$(admin "$t" "$i")" --timeout-ms 10000 status >/dev/null 2>&1; do
    if ! kill -0 "${PIDS[$t,$i]}" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      echo "$PROG: $t node$i did not come up:" >&2
      cat "$DIR/$t$i.log" >&2
      exit 1
    fi
    sleep 0.2
  done
}

# One line per set: "transport[,transport...] queue_pairs data_connections direct_puts bounce_puts
# served rails" summed over its daemons (transports and rails as reported, deduplicated). Saves
# the JSON.
status_line() {
  local t=$1 tag=$2 i files=()
  for ((i = 0; i < NODES; i++)); do
    "$DIR/ohioctl" --socket "$(admin "$t" $i)" --json --timeout-ms 30000 status > "$DIR/status-$tag-$t$i.json" ||
      { echo "$PROG: ohioctl status of $t node$i failed" >&2; return 1; }
    files+=("$DIR/status-$tag-$t$i.json")
  done
  jq -r -s '[(map(.transport // "?") | unique | join(",")),
              (map(.transport_counters.queue_pairs // 0) | add), (map(.data_connections // 0) | add),
              (map(.transport_counters.direct_puts // 0) | add), (map(.transport_counters.bounce_puts // 0) | add),
              (map(.collectives_served // 0) | add),
              (map(.transport_counters.rails // [] | .[]) | unique | join(",") | if . == "" then "-" else . end)]
             | map(tostring) | join(" ")' "${files[@]}"
}
rxe_pkts() { local n=0 f; for f in "${RXE_COUNTERS[@]}"; do n=$(( n + $(cat "$f") )); done; echo $n; }

iterations_for() {
  if [ -n "$ITERATIONS" ]; then echo "$ITERATIONS"
  elif [ "$1" -le 1024 ]; then echo 400
  elif [ "$1" -le 16384 ]; then echo 100
  elif [ "$1" -le 262144 ]; then echo 16
  elif [ "$1" -le 1048576 ]; then echo 8
  else echo 4; fi
}

echo "# $PROG: $NODES nodes x $PPN ranks per node per set, sizes $SIZES, algorithms $ALGORITHMS," \
     "$REPS runs per size and set, in $DIR"
echo "# guest: $(nproc) CPUs, kernel $(uname -r), RDMA devices: $(cd /sys/class/infiniband && echo *)"
for t in "${SETS[@]}"; do start_set "$t"; done
for t in "${SETS[@]}"; do for ((i = 0; i < NODES; i++)); do wait_up "$t" $i; done; done

# Both sets must run the transport asked for before anything is timed.
for t in "${SETS[@]}"; do
  st=$(status_line "$t" start)
  read -r tr _ _ _ _ _ rails <<<"$st"
  if [ "$tr" != "$t" ]; then
    echo "$PROG: the $t daemons report transport '$tr'" >&2
    exit 1
  fi
  echo "# $t set: every daemon reports transport $tr$( [ "$t" = verbs ] && echo ", rails $rails")"
  echo "#   node0: $(jq -r .transport_choice "$DIR/status-start-${t}0.json")"
done

declare -A SOCKS
for t in "${SETS[@]}"; do SOCKS[$t]=$(for ((i = 0; i < NODES; i++)); do sock "$t" $i; done | paste -sd,); done
NA=${#ALGO_LIST[@]}
RUNLOG="$DIR/runs.out"   # size set rep calls flat_us memcpy_us alg1_us [alg2_us ...]
: > "$RUNLOG"
CHECKS="$DIR/checks.out" # size set rep rxe_pkts direct_puts bounce_puts served
: > "$CHECKS"
FAILED=0
START=$SECONDS
for m in "${SIZE_LIST[@]}"; do
  n=$(iterations_for "$m")
  for ((rep = 1; rep <= REPS; rep++)); do
    if [ $(( rep % 2 )) = 1 ]; then order=(verbs tcp); else order=(tcp verbs); fi
    for t in "${order[@]}"; do
      out="$DIR/bench-$m-$t-$rep.out"
      st=$(status_line "$t" "before-$m-$rep")
      read -r _ _ _ d0 b0 s0 _ <<<"$st"
      p0=$(rxe_pkts)
      OHIO_SPIN_US=20 timeout --kill-after=10 1800 "$DIR/alltoall_bench" --sockets "${SOCKS[$t]}" --ppn "$PPN" \
        --algorithms "$ALGORITHMS" --min-bytes "$m" --max-bytes "$m" --iterations "$n" --rounds "$ROUNDS" \
        --timeout-s 300 > "$out" 2> "$DIR/bench-$m-$t-$rep.err" &
      BENCH_PID=$!
      rc=0
      wait "$BENCH_PID" || rc=$?
      BENCH_PID=
      p1=$(rxe_pkts)
      st=$(status_line "$t" "after-$m-$rep")
      read -r tr _ _ d1 b1 s1 _ <<<"$st"
      if [ $rc != 0 ]; then
        echo "$PROG: alltoall_bench failed on the $t set, $m bytes, run $rep (exit $rc):" >&2
        cat "$DIR/bench-$m-$t-$rep.err" >&2
        FAILED=1
        break 3
      fi
      # bytes calls memcpy_us flat_us alg_us alg/flat [...]
      row=$(awk -v m="$m" '$1 == m && $2 ~ /^[0-9]+$/ { print; exit }' "$out")
      read -r -a f <<<"$row"
      line="$m $t $rep ${f[1]} ${f[3]} ${f[2]}"
      for ((a = 0; a < NA; a++)); do line+=" ${f[$((4 + 2 * a))]}"; done
      echo "$line" >> "$RUNLOG"
      echo "$m $t $rep $(( p1 - p0 )) $(( d1 - d0 )) $(( b1 - b0 )) $(( s1 - s0 )) $tr" >> "$CHECKS"
      printf '# %8s B  %-5s run %d: %s us (flat %s us)  rxe packets %d, RDMA puts %d direct + %d bounce, %d collectives  [%d s]\n' \
        "$m" "$t" "$rep" "$(echo "$line" | cut -d' ' -f7- | tr ' ' '/')" "${f[3]}" $(( p1 - p0 )) \
        $(( d1 - d0 )) $(( b1 - b0 )) $(( s1 - s0 )) $(( SECONDS - START ))
    done
  done
done
[ "$FAILED" = 0 ] || exit 1

# The sets did what their name says: verbs runs moved packets through rxe as RDMA puts, tcp runs
# left rxe alone and ran on TCP.
BAD=$(awk '$2 == "verbs" && ($4 == 0 || $5 + $6 == 0 || $8 != "verbs") { print "verbs run without RDMA:", $0 }
           $2 == "tcp" && ($5 + $6 != 0 || $8 != "tcp") { print "tcp run with RDMA puts:", $0 }' "$CHECKS")
if [ -n "$BAD" ]; then echo "$PROG: transport check failed:" >&2; echo "$BAD" >&2; exit 1; fi
st=$(status_line verbs end)
read -r _ qp_v dc_v _ _ _ rails_v <<<"$st"
st=$(status_line tcp end)
read -r _ qp_t dc_t _ _ _ _ <<<"$st"
rdma resource show qp > "$DIR/rdma-qp.out" 2>&1 || true
data_tcp_conns() {  # established TCP connections with one end on a data port of set $1
  local t=$1 i n=0
  for ((i = 0; i < NODES; i++)); do
    n=$(( n + $(ss -Htn state established "( sport = :$(data_port "$t" $i) )" | wc -l) ))
  done
  echo $n
}

echo
echo "## verbs vs tcp: $NODES nodes x $PPN ranks per node, algorithm(s) $ALGORITHMS, $(( SECONDS - START )) s of runs"
echo
IFS=, read -r -a rails <<<"$rails_v"
echo "Checks (summed over the $NODES daemons of each set, after the runs): verbs set: $qp_v RC queue pairs" \
     "(expected K(K-1) x ${#rails[@]} rails = $(( NODES * (NODES - 1) * ${#rails[@]} )); rails $rails_v)," \
     "$dc_v data connections, $(data_tcp_conns verbs) TCP connections accepted on its data ports;" \
     "tcp set: $qp_t queue pairs, $dc_t data connections, $(data_tcp_conns tcp) TCP connections accepted on its data" \
     "ports (expected K(K-1)/2 = $(( NODES * (NODES - 1) / 2 )))."
awk '{ pk[$2] += $4; d[$2] += $5; b[$2] += $6; c[$2] += $7 }
     END { for (t in pk) printf "%s runs: rxe packets sent %d, RDMA puts %d direct + %d through bounce buffers, %d collectives served (summed over daemons)\n", t, pk[t], d[t], b[t], c[t] }' \
  "$CHECKS" | sort
echo "RC queue pairs as the kernel lists them ('rdma resource show qp'; a daemon's accepted ones are"
echo "credited to its gRPC thread):"
grep ' type RC ' "$DIR/rdma-qp.out" | sed 's/^/    /' || true
echo
echo "Microseconds per alltoall call (averaged over calls and ranks), median of $REPS runs per set;" \
     "flat = the bench's own pairwise TCP alltoall between the ranks, no daemon, in the same runs."
echo
hdr="| bytes per rank | calls |"
sep="| ---: | ---: |"
for a in "${ALGO_LIST[@]}"; do
  hdr+=" $a verbs µs | $a tcp µs | tcp/verbs | $a tcp/verbs per run pair |"
  sep+=" ---: | ---: | ---: | --- |"
done
hdr+=" flat µs (verbs runs) | flat µs (tcp runs) | verbs puts via bounce buffers |"
sep+=" ---: | ---: | ---: |"
echo "$hdr"
echo "$sep"
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v m="$1" -v t="$2" -v c="$3" '$1 == m && $2 == t { print $c }' "$RUNLOG"; }
# tcp/verbs of the two runs with the same rep number (back to back in time), one line each, in order.
pair_ratios() {
  awk -v m="$1" -v c="$2" '$1 == m { x[$2, $3] = $c; if ($3 > n) n = $3 }
    END { for (r = 1; r <= n; r++) if (((("verbs", r) in x)) && ((("tcp", r) in x)) && x["verbs", r] > 0) print x["tcp", r] / x["verbs", r] }' "$RUNLOG"
}
for m in "${SIZE_LIST[@]}"; do
  row="| $m | $(col "$m" verbs 4 | head -1) |"
  for ((a = 0; a < NA; a++)); do
    c=$(( 7 + a ))
    mv=$(col "$m" verbs $c | median)
    mt=$(col "$m" tcp $c | median)
    row+=" $(printf '%.1f' "$mv") | $(printf '%.1f' "$mt") | $(awk -v v="$mv" -v t="$mt" 'BEGIN { printf "%.2f", (v > 0 ? t / v : 0) }') |"
    row+=" $(printf '%.2f' "$(pair_ratios "$m" $c | median)") ($(pair_ratios "$m" $c | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 }')) |"
  done
  row+=" $(printf '%.1f' "$(col "$m" verbs 5 | median)") | $(printf '%.1f' "$(col "$m" tcp 5 | median)") |"
  row+=" $(awk -v m="$m" '$1 == m && $2 == "verbs" { d += $5; b += $6 } END { printf "%d of %d", b, d + b }' "$CHECKS") |"
  echo "$row"
done
echo
echo "(tcp/verbs above 1: verbs faster; first from the two medians, then per run pair: the median, and in"
echo "brackets each pair's ratio in run order, a pair being a verbs run and the tcp run right before or after it."
echo "Bounce buffers: RDMA puts of the verbs runs that went through the pre-registered bounce buffers"
echo "(a group's segment not registered yet: each bench run makes fresh groups) instead of directly.)"
