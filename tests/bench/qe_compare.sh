#!/bin/bash
# Quantum ESPRESSO's pw.x (Debian's, linked to Open MPI) with and without ohio, in the same
# invocation, across K network namespaces x P ranks (deploy/lib/netns-cluster.sh: one ohiod in
# each, Open MPI launching through the ssh stand-in, TCP between the namespaces). The input is
# tests/mpi/qe/si.scf.in with its cutoff raised to --ecut Ry, so that its FFT transposes
# (MPI_ALLTOALL from Fortran) carry more than a handful of bytes.
#
# Variants, run once each per round, the order rotating between rounds (--runs R rounds):
#   openmpi    Open MPI alone (no shim; the coll/ohio component, if given, turned off)
#   shim       libohio_mpi_openmpi.so preloaded
#   component  the coll/ohio component (--component DIR: the directory holding mca_coll_ohio.so),
#              no preload; left out without --component
# Prints per run and, per variant, the median over the runs of pw.x's wall time (PWSCF), its FFT
# wall time (the fft and fftw lines of its timing report), the CPU time (user + system) and
# context switches of the job's ranks (GNU time around each rank) plus the daemons' (their
# threads' /proc counters before and after), and the ratios to openmpi. A run whose total energy
# differs from the first run's, or whose ohio run let an MPI_Alltoall be handed back, stops it.
#
# usage: tests/bench/qe_compare.sh [--nodes K (4)] [--ppn P (2)] [--runs R (3)] [--ecut RY (40)]
#          [--component DIR] [--out DIR (/tmp/ohio-bench/qe)]
# As root (namespaces; mpirun --allow-run-as-root). Run it alone on the machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

NODES=4
PPN=2
RUNS=3
ECUT=40
COMPONENT=""
OUT=/tmp/ohio-bench/qe
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) NODES=$2; shift 2 ;;
    --ppn) PPN=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --ecut) ECUT=$2; shift 2 ;;
    --component) COMPONENT=$(realpath "$2"); shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
RANKS=$((NODES * PPN))
if [ -n "$COMPONENT" ] && [ ! -f "$COMPONENT/mca_coll_ohio.so" ]; then
  echo "qe_compare: no mca_coll_ohio.so in $COMPONENT" >&2
  exit 2
fi
# Open MPI's own components after ohio's: the path replaces Open MPI's default.
[ -z "$COMPONENT" ] || COMPONENT="$COMPONENT:$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')"

NETNS_PROG=qe_compare
# shellcheck source=deploy/lib/netns-cluster.sh
. deploy/lib/netns-cluster.sh

bazel build --curses=no //daemon:ohiod //client:libohio_mpi_openmpi.so
BIN=$(bazel info bazel-bin 2>/dev/null)
mkdir -p "$OUT"
# munged checks every directory above its socket: /tmp, not a scratch tree.
DIR=$(mktemp -d /tmp/qe-compare.XXXXXX)
DAEMON_PIDS=()
KEEP=0  # a failed run's outputs are kept for a look
cleanup() {
  for p in "${DAEMON_PIDS[@]}"; do stop_pid "$p"; done
  [ -n "${MUNGED_PID:-}" ] && stop_pid "$MUNGED_PID"
  teardown_network || true
  [ "$KEEP" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT

netns_lock 300
cp deploy/lib/netns-ssh.sh "$BIN/daemon/ohiod" "$DIR/"
setup_network "$NODES"
start_munged "$DIR"
PEERS=()
for ((i = 0; i < NODES; i++)); do PEERS+=(--peer "node$i=$(node_ip $i):7470"); done
for ((i = 0; i < NODES; i++)); do
  start_ohiod $i "$DIR" "$(node_ip $i)" 7470 7471 "$(ns_name $i)" "${PEERS[@]}"
done
for ((i = 0; i < NODES; i++)); do wait_ohiod_up $i "$DIR" "${DAEMON_PIDS[$i]}"; done
: > "$DIR/hostfile"
for ((i = 0; i < NODES; i++)); do echo "$(node_ip $i) slots=$PPN" >> "$DIR/hostfile"; done

sed -e "s/ecutwfc = [0-9.]*/ecutwfc = $ECUT/" tests/mpi/qe/si.scf.in > "$DIR/si.scf.in"
grep -q "ecutwfc = $ECUT" "$DIR/si.scf.in" || { echo "qe_compare: could not set the cutoff" >&2; exit 1; }

# daemon_usage: "CPU-seconds context-switches" of every ohiod thread so far.
daemon_usage() {
  local ticks=0 switches=0 t
  for p in "${DAEMON_PIDS[@]}"; do
    for t in /proc/"$p"/task/*; do
      ticks=$(( ticks + $(awk '{print $14 + $15}' "$t/stat" 2>/dev/null || echo 0) ))
      switches=$(( switches + $(awk '/ctxt_switches/ {s += $2} END {print s + 0}' "$t/status" 2>/dev/null || echo 0) ))
    done
  done
  echo "$(python3 -c "print($ticks / $(getconf CLK_TCK))") $switches"
}

# run VARIANT INDEX: one pw.x job; appends "variant wall fft cpu_s switches" to $DIR/results.
run() {
  local variant=$1 i=$2 work="$DIR/$1-$2"
  mkdir -p "$work"
  cp "$DIR/si.scf.in" tests/mpi/qe/Si.pz-vbc.UPF "$work/"
  local how=()
  case $variant in
    openmpi) [ -z "$COMPONENT" ] || how=(--mca mca_base_component_path "$COMPONENT" --mca coll ^ohio) ;;
    # ohio's runs measure ohio: every call goes to it, whatever the selection table would choose.
    shim) how=(-x "LD_PRELOAD=$BIN/client/libohio_mpi_openmpi.so" -x OHIO_STATS=1 -x OHIO_SELECTION=always) ;;
    component) how=(--mca mca_base_component_path "$COMPONENT" -x OHIO_STATS=1 -x OHIO_SELECTION=always) ;;
  esac
  local before
  before=$(daemon_usage)
  (cd "$work" && timeout --kill-after=5 600 env -u OHIO_SOCKET -u LD_PRELOAD OHIO_NETNS_SOCKET_DIR="$DIR" \
    mpirun.openmpi --allow-run-as-root -np $RANKS --mca pml ob1 --hostfile "$DIR/hostfile" \
      --mca plm_rsh_agent "$DIR/netns-ssh.sh" --mca oob_tcp_if_include 10.77.0.0/24 \
      --mca btl_tcp_if_include 10.77.0.0/24 --mca btl tcp,vader,self --mca mpi_yield_when_idle 1 \
      "${how[@]}" /usr/bin/time -a -f "%U %S %w %c" -o "$work/time" /usr/bin/pw.x -in si.scf.in \
      > "$work/mpirun.out" 2>&1) || true
  local after
  after=$(daemon_usage)
  local o="$work/mpirun.out" energy wall fft served fell
  energy=$(grep -E "^!    total energy" "$o" || true)
  wall=$(sed -nE 's/^ *PWSCF *:.* ([0-9.]+)s WALL.*/\1/p' "$o" | head -1)
  # pw.x's report: "fft : 0.10s CPU 0.12s WALL (N calls)", and fftw likewise; their sum.
  fft=$(sed -nE 's/^ *fftw? *:.* ([0-9.]+)s WALL.*/\1/p' "$o" | awk '{s += $1} END {printf "%.2f", s}')
  read -r served fell < <(sed -n 's/^ohio: \([0-9]*\) MPI_Alltoall calls served by ohiod, \([0-9]*\) fell.*/\1 \2/p' "$o"
                          echo "- -")
  local cpu switches
  read -r cpu switches < <(python3 - "$work/time" "$before" "$after" <<'PY'
import sys
try:
    ranks = [[float(x) for x in line.split()] for line in open(sys.argv[1]) if len(line.split()) == 4]
except FileNotFoundError:  # the job never ran pw.x: the checks below stop the run
    ranks = []
before, after = ([float(x) for x in a.split()] for a in sys.argv[2:4])
cpu = sum(r[0] + r[1] for r in ranks) + after[0] - before[0]
switches = sum(r[2] + r[3] for r in ranks) + after[1] - before[1]
print(f"{cpu:.2f} {int(switches)}")
PY
)
  printf "%-10s run %d: wall %7s s  fft %7s s  CPU %7s s  switches %8d  Alltoall served %s fell %s  %s\n" \
    "$variant" "$i" "${wall:-?}" "$fft" "$cpu" "$switches" "$served" "$fell" "$energy"
  [ -n "$REFERENCE" ] || REFERENCE=$energy
  [ "$(grep -c . "$work/time" 2>/dev/null || echo 0)" = "$RANKS" ] || energy="(not every rank timed)"
  if [ -z "$energy" ] || [ -z "$wall" ] || [ "$energy" != "$REFERENCE" ] ||
     { [ "$variant" != openmpi ] && [ "$fell" != 0 ]; }; then
    echo "qe_compare: $variant run $i failed (no energy, another energy, or calls handed back); output in $work" >&2
    KEEP=1
    exit 1
  fi
  echo "$variant $wall $fft $cpu $switches" >> "$DIR/results"
}

VARIANTS=(openmpi shim)
[ -z "$COMPONENT" ] || VARIANTS+=(component)
REFERENCE=""
echo "qe_compare: pw.x, $NODES namespaces x $PPN ranks, ecutwfc $ECUT Ry, $RUNS rounds of ${VARIANTS[*]}" \
  "($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
for ((i = 1; i <= RUNS; i++)); do
  # Rotate the order so that no variant always runs first.
  for ((k = 0; k < ${#VARIANTS[@]}; k++)); do run "${VARIANTS[$(( (i + k) % ${#VARIANTS[@]} ))]}" "$i"; done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$DIR/results" "$OUT/qe-${NODES}x${PPN}.csv" "${VARIANTS[@]}" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
variants = sys.argv[3:]
med = {}
for v in variants:
    cols = list(zip(*[[float(x) for x in r[1:]] for r in rows if r[0] == v]))
    med[v] = [statistics.median(c) for c in cols]
names = ("wall s", "fft wall s", "CPU s per job", "context switches per job")
print("medians              " + "".join(f"{n:>26}" for n in names))
for v in variants:
    print(f"{v:<21}" + "".join(f"{x:>26.4g}" for x in med[v]))
for v in variants[1:]:
    print(f"{v + ' / openmpi':<21}" +
          "".join(f"{a / b if b else float('nan'):>26.3f}" for a, b in zip(med[v], med["openmpi"])))
with open(sys.argv[2], "w") as out:
    out.write("variant,wall_s,fft_wall_s,cpu_s,context_switches\n")
    for v in variants:
        out.write(v + "," + ",".join(f"{x:.6g}" for x in med[v]) + "\n")
print("csv: " + sys.argv[2])
EOF
