#!/bin/bash
# deploy/build-debs.sh --release trixie: the Debian 13 packages (libohio with coll/ohio built for
# Open MPI 5.0, libohio-dev) built inside the Debian 13 root, their dependencies named as Debian 13
# names them, installed there with dpkg -i (over an overlay of the root, which stays as it was),
# Open MPI 5's ompi_info finding the installed component, and then served jobs: an Open MPI 5.0
# job through the installed component from Open MPI's own component directory, and an MPICH 4.2 job through the installed shim, against an ohiod of this
# machine.
set -euo pipefail
R="$TEST_SRCDIR/$TEST_WORKSPACE"
T="$TEST_TMPDIR"
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$R/deploy/build-debs.sh" --release trixie --from "$R" --out "$T/debs" > "$T/debs.list"
cat "$T/debs.list"
arch=$(dpkg --print-architecture)
for p in libohio libohio-dev libohio-dbgsym; do
  grep -q "^$T/debs/${p}_.*_$arch.deb$" "$T/debs.list" || fail "build-debs.sh did not print the path of $p's package"
done
[ "$(wc -l < "$T/debs.list")" = 3 ] ||
  fail "Debian 13's set is libohio, libohio-dev and libohio-dbgsym, got: $(cat "$T/debs.list")"

libohio=$(ls "$T"/debs/libohio_*.deb)
depends=$(dpkg-deb -f "$libohio" Depends)
echo "libohio Depends: $depends"
# trixie's names: protobuf's 64-bit time_t rebuild, Open MPI 5's library package, MPICH's.
for d in libprotobuf32t64 libopenmpi40 libmpich12; do
  [[ ", $depends," == *", $d "* || ", $depends," == *", $d,"* ]] || fail "libohio does not depend on $d: $depends"
done
[[ ", $depends," != *", libprotobuf32 "* && ", $depends," != *", libopenmpi3 "* ]] ||
  fail "libohio depends on Debian 12's packages: $depends"
component=./usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi40/mca_coll_ohio.so
# Listed first: grep -q leaving a pipe early would fail the writer (pipefail).
dpkg-deb -c "$libohio" > "$T/libohio.contents"
grep -q " $component$" "$T/libohio.contents" || fail "libohio does not hold $component: $(cat "$T/libohio.contents")"

# The jobs' directory: short, under /tmp, for the daemon's socket path.
W=$(mktemp -d /tmp/ohio-trixie-debs.XXXXXX)
daemon=
cleanup() {
  [ -z "$daemon" ] || kill "$daemon" 2>/dev/null || true
  rm -rf "$W"
}
trap cleanup EXIT
cp "$T"/debs/*.deb "$W/"
mkdir -p "$W/tests/mpi"
cp "$R"/tests/mpi/alltoall_check.c "$R"/tests/mpi/checked_calls.h "$R"/tests/mpi/ring_message.h "$W/tests/mpi/"
in_root() { bash "$R/tests/trixie/in_root.sh" --overlay "$T/overlay" --bind "$W" --cd "$W" -- "$@"; }

in_root dpkg -i "$W"/libohio_*.deb "$W"/libohio-dev_*.deb > "$T/dpkg.out" 2>&1 || fail "dpkg -i: $(cat "$T/dpkg.out")"
in_root ompi_info > "$T/ompi_info.out" 2>&1 || true
grep -q "MCA coll: ohio (MCA v2.1.0, API v2.4.0, Component v5" "$T/ompi_info.out" ||
  fail "Open MPI 5's ompi_info does not list the installed coll/ohio: $(grep 'MCA coll' "$T/ompi_info.out")"
echo "ompi_info: $(grep 'MCA coll: ohio' "$T/ompi_info.out")"

"$R/daemon/ohiod" --socket "$W/ohiod.sock" --admin-socket "$W/admin.sock" --peer-port 0 --data-port 0 \
  --listen 127.0.0.1 --advertise 127.0.0.1 --auth none > "$T/ohiod.log" 2>&1 &
daemon=$!
deadline=$((SECONDS + 60))
until [ -S "$W/ohiod.sock" ]; do
  kill -0 "$daemon" 2>/dev/null || fail "ohiod exited: $(cat "$T/ohiod.log")"
  [ $SECONDS -lt $deadline ] || fail "ohiod has no control socket after 60 s: $(cat "$T/ohiod.log")"
  sleep 0.2
done

# expect_served OUT BINDING: 4 ranks ALL OK, none WRONG, and the calls served through BINDING.
expect_served() {
  local out=$1 binding=$2 r served
  for r in 0 1 2 3; do grep -q "rank $r: ALL OK" "$out" || fail "rank $r not ALL OK: $(cat "$out")"; done
  ! grep -q WRONG "$out" || fail "a wrong byte: $(cat "$out")"
  grep -q "ohio: served through $binding" "$out" || fail "not served through $binding: $(cat "$out")"
  served=$(sed -n 's/^ohio: \([0-9]*\) MPI_Alltoall calls served by ohiod.*/\1/p' "$out")
  [ "${served:-0}" -gt 100 ] || fail "only '${served}' MPI_Alltoall calls served: $(cat "$out")"
  echo "$binding: $served MPI_Alltoall calls served"
}
env=(OHIO_SOCKET="$W/ohiod.sock" OHIO_STATS=1 OHIO_SELECTION=always)

in_root mpicc.openmpi -I"$W" -o alltoall_check_openmpi tests/mpi/alltoall_check.c
# Debian 13's mpirun (PRRTE) hands its ranks PMIx's component directory as theirs
# (OMPI_MCA_mca_base_component_path=/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix), where no Open MPI
# component is: a job names Open MPI's own directory, where the package installed coll/ohio.
components_dir=$(dirname "${component#.}")
oenv=(--mca mca_base_component_path "$components_dir")
for e in "${env[@]}"; do oenv+=(-x "$e"); done
timeout 300 bash "$R/tests/trixie/in_root.sh" --overlay "$T/overlay" --bind "$W" --cd "$W" -- \
  mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 --mca pml ob1 --mca btl self,sm "${oenv[@]}" \
  ./alltoall_check_openmpi 65536 2 > "$T/openmpi.out" 2>&1 || fail "Open MPI 5 job: $(cat "$T/openmpi.out")"
expect_served "$T/openmpi.out" "Open MPI's collective component coll/ohio"

in_root mpicc.mpich -I"$W" -o alltoall_check_mpich tests/mpi/alltoall_check.c
menv=(-genv LD_PRELOAD libohio_mpi_mpich.so)
for e in "${env[@]}"; do menv+=(-genv "${e%%=*}" "${e#*=}"); done
timeout 300 bash "$R/tests/trixie/in_root.sh" --overlay "$T/overlay" --bind "$W" --cd "$W" -- \
  mpirun.mpich -launcher fork -np 4 "${menv[@]}" ./alltoall_check_mpich 65536 2 > "$T/mpich.out" 2>&1 ||
  fail "MPICH 4.2 job: $(cat "$T/mpich.out")"
expect_served "$T/mpich.out" "the LD_PRELOAD shim (libohio_mpi)"
echo PASS
