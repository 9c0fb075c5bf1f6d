#!/bin/bash
# deploy/measure-selection.sh for real, as an admin runs it, over two "hosts" (network namespaces
# joined by veths, deploy/lib/netns-cluster.sh), one ohiod in each, Open MPI launching 2 ranks on
# each through the ssh stand-in (deploy/lib/netns-ssh.sh): MPI_Alltoall and MPI_Ialltoall from
# 64 B to 64 KiB, one run. The table it writes must carry the header (command, date, hosts,
# every size's medians and ratio), one ohio row per maximal range of sizes its own verdicts gave
# ohio, every row for the measured shape naming 2 nodes x 2 ranks and the transport the local
# ohiod reported, and the CSV of every latency beside it; ohio must really have served the
# calls. Then a measurement that fails must leave an existing table as it was.
set -euo pipefail
NETNS_PROG=measure_selection_test
# shellcheck source=tests/mpi/netns/netns_two_nodes.sh
. "$TEST_SRCDIR/$TEST_WORKSPACE/tests/mpi/netns/netns_two_nodes.sh"
mkdir "$DIR/bin" "$DIR/out"
cp "$R/tests/bench/mpi_alltoall_bench_openmpi" "$R/tests/bench/mpi_ialltoall_bench_openmpi" \
   "$R/client/libohio_mpi_openmpi.so" "$R/client/ohioctl" "$DIR/bin/"
# The admin's hostfile: slots differ from --ppn, a comment, a host named twice.
printf '# the two namespaces\n%s slots=8\n%s\n%s slots=1\n' "$(node_ip 0)" "$(node_ip 1)" "$(node_ip 0)" > "$DIR/hosts"

TABLE=$DIR/out/selection.table
# The launcher agent gives each host's ranks OHIO_SOCKET = its node's daemon (OHIO_NETNS_SOCKET_DIR);
# the transport comes from node 0's daemon through ohioctl (OHIO_ADMIN_SOCKET), not from a flag.
rc=0
OHIO_NETNS_SOCKET_DIR=$DIR OHIO_ADMIN_SOCKET=$DIR/node0.admin.sock timeout --kill-after=5 150 \
  bash "$R/deploy/measure-selection.sh" --hostfile "$DIR/hosts" --ppn 2 --functions alltoall,ialltoall \
    --min-bytes 64 --max-bytes 65536 --runs 1 --iterations 20 --run-timeout 60 \
    --launcher-agent "$DIR/netns-ssh.sh" --bin-dir "$DIR/bin" --work-dir "$DIR/work" --out "$TABLE" \
    --mpirun-args "--mca pml ob1 --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 --mca btl tcp,vader,self --mca mpi_yield_when_idle 1" \
  > "$DIR/measure.out" 2>&1 || rc=$?
cat "$DIR/measure.out"
[ $rc = 0 ] || { cat "$DIR"/node*.log >&2; fail "measure-selection.sh exited $rc$([ $rc != 124 ] || echo ' (timed out after 150 s)')"; }
[ -f "$TABLE" ] || fail "no table at $TABLE"
cat "$TABLE"

# The header: the preamble, the command, the date, the hosts (each once), the shape and transport.
head -1 "$TABLE" | grep -qx "# ohio selection table: which calls ohio serves and which it hands to the MPI library." ||
  fail "the table does not open with the preamble"
grep -q "^# Measured by: deploy/measure-selection.sh --hostfile $DIR/hosts --ppn 2 --functions alltoall,ialltoall " "$TABLE" ||
  fail "no command line in the header"
grep -qE "^# Date: [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC$" "$TABLE" || fail "no date in the header"
grep -qx "# Hosts (hostfile $DIR/hosts): $(node_ip 0) $(node_ip 1)" "$TABLE" || fail "the hosts line is not the two hosts"
grep -qx "# Shape: 2 nodes x 2 ranks per node; transport tcp (the local ohiod (ohioctl status))" "$TABLE" ||
  fail "the shape line: $(grep '^# Shape' "$TABLE")"
grep -qx "# function   nodes  ppn  transport  bytes        path" "$TABLE" || fail "no column line"

# Every size of each function has its medians and verdict; from these verdicts, the ranges of
# consecutive sizes ohio won are the ohio rows, one each, in order.
expected_rows=()
for f in alltoall ialltoall; do
  verdicts=$(sed -nE "s/^#   $f +([0-9]+)  runs 1\/1  ohio +[0-9.]+  mpi +[0-9.]+  ratio +[0-9.]+  (ohio|mpi)$/\1 \2/p" "$TABLE")
  [ "$(echo "$verdicts" | awk '{ print $1 }' | tr '\n' ' ')" = "64 128 256 512 1024 2048 4096 8192 16384 32768 65536 " ] ||
    fail "$f: the per-size lines are not 64 B .. 64 KiB, one run each way: $verdicts"
  while read -r range; do expected_rows+=("$f 2 2 tcp $range ohio"); done < <(echo "$verdicts" | awk '
    function unit(n) { return n % 1024 ? n : n / 1024 "KiB" }
    function flush() { if (lo) print (lo == hi ? unit(lo) : unit(lo) "-" unit(hi)); lo = 0 }
    $2 == "ohio" { if (!lo) lo = $1; hi = $1; next }
    { flush() }
    END { flush() }')
done
for f in alltoall ialltoall; do expected_rows+=("$f 2 2 tcp any mpi"); done
expected_rows+=("alltoall any any any 512-4KiB ohio")
mapfile -t rows < <(grep -v '^#' "$TABLE" | awk '{ $1 = $1; print }')
for r in "${rows[@]}"; do
  [ "$(echo "$r" | wc -w)" = 6 ] || fail "row '$r' does not have 6 columns"
done
[ "$(printf '%s\n' "${rows[@]}")" = "$(printf '%s\n' "${expected_rows[@]}")" ] ||
  fail "rows:
$(printf '  %s\n' "${rows[@]}")
expected from the table's own verdicts:
$(printf '  %s\n' "${expected_rows[@]}")"
# Every row before the fallback is for the shape measured.
for r in "${rows[@]:0:${#rows[@]}-1}"; do
  read -r _ nodes ppn transport _ <<< "$r"
  [ "$nodes $ppn $transport" = "2 2 tcp" ] || fail "row '$r' is not for 2 nodes x 2 ranks over tcp"
done

# Every latency beside it: 11 sizes x 2 variants x 2 functions, and ohio served the calls.
CSV=$TABLE.csv
[ "$(head -1 "$CSV")" = "function,bytes,variant,run,latency_us" ] || fail "the CSV's header: $(head -1 "$CSV")"
[ "$(grep -cE '^(alltoall|ialltoall),[0-9]+,(ohio|mpi),0,[0-9.]+$' "$CSV")" = 44 ] || fail "the CSV has not 44 latencies: $(cat "$CSV")"
grep -qE "alltoall +ohio ok, [1-9][0-9]* calls served by ohio" "$DIR/measure.out" || fail "no alltoall run served by ohio"
grep -qE "ialltoall +ohio ok, [1-9][0-9]* calls served by ohio" "$DIR/measure.out" || fail "no ialltoall run served by ohio"
for i in 0 1; do
  grep -q "created for 4 ranks, 2 on this node" "$DIR/node$i.log" || fail "node$i held no group of 4 ranks, 2 on it"
done
grep -q "^install it on every node: copy it there, add \`selection-table = $TABLE\`" "$DIR/measure.out" ||
  fail "the script did not say how to install the table"
# ohiod's own parser reads the table as written: ohio-plan --select parses it as ohiod does and
# gives the measured shape the verdict the table's comment header printed for 64 KiB.
"$R/client/ohio-plan" --select --selection-table "$TABLE" --nodes 2 --ppn 2 --bytes 64KiB > "$DIR/select.out" 2>&1 ||
  fail "ohio-plan cannot read the table: $(cat "$DIR/select.out")"
verdict=$(grep -E "^#   alltoall +65536 " "$TABLE" | awk '{print $NF}')
case "$verdict" in
  ohio) grep -q "^  alltoall    ohio (row " "$DIR/select.out" || fail "64KiB: the header says ohio, the table does not: $(cat "$DIR/select.out")" ;;
  mpi) grep -q "^  alltoall    the MPI library (row " "$DIR/select.out" || fail "64KiB: the header says mpi, the table does not: $(cat "$DIR/select.out")" ;;
  *) fail "no verdict for alltoall at 65536 in the table's header" ;;
esac

# A measurement that fails (mpirun exits 1 at once) leaves the table there as it was.
cp "$TABLE" "$DIR/before"
rc=0
timeout 60 bash "$R/deploy/measure-selection.sh" --hostfile "$DIR/hosts" --ppn 2 --transport tcp --min-bytes 64 \
  --max-bytes 64 --runs 1 --mpirun false --bin-dir "$DIR/bin" --work-dir "$DIR/work2" --out "$TABLE" > "$DIR/failed.out" 2>&1 || rc=$?
[ $rc = 1 ] || { cat "$DIR/failed.out" >&2; fail "a failing mpirun: exit $rc, expected 1"; }
grep -q "alltoall.mpi.0: mpirun exited 1, 0 of 1 sizes; no table written" "$DIR/failed.out" ||
  { cat "$DIR/failed.out" >&2; fail "a failing mpirun: no message saying so"; }
cmp -s "$TABLE" "$DIR/before" || fail "a failed measurement changed the table"
echo "PASS"
