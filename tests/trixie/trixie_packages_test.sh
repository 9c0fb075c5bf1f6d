#!/bin/bash
# deploy/build-debs.sh --release trixie: all four Debian 13 packages (ohiod, ohioctl, ohio-plan
# and the benchmarks built inside the Debian 13 root with its own gRPC, protobuf, spdlog and fmt;
# libohio with coll/ohio built for Open MPI 5.0; libohio-dev), their dependencies named as
# Debian 13 names them, installed with apt into an overlay of the Debian 13 root (which stays as
# it was; apt fetches munge and the libraries from Debian's mirror, its downloads kept between
# runs). Then, in that root: the unit installed and enabled, Open MPI 5's ompi_info finding the
# installed component, and the installed ohiod, started with the installed config (MUNGE
# authentication, its sockets in the root's /run/ohio), serving an Open MPI 5.0 job through the
# installed component and an MPICH 4.2 job through the installed shim: every byte checked by the
# ranks, and the calls counted by the installed ohioctl.
#
# The build in the root and the packages are cached under /var/cache/ohio-test by what they are
# made of (times in deploy/build-debs.sh's header). Measured on a loaded 2-core machine: 54 s with
# nothing changed; after a change, 2 to 3 minutes more for Bazel in the root and, when the
# packaged files changed, about 5 for the packages; a cold run (the build layer and the whole
# build in the root) about 30 minutes.
set -euo pipefail
R="$TEST_SRCDIR/$TEST_WORKSPACE"
T="$TEST_TMPDIR"
ARCHIVES=/var/cache/ohio-test/trixie-apt-archives
fail() { echo "FAIL: $*" >&2; exit 1; }

started=$SECONDS
bash "$R/deploy/build-debs.sh" --release trixie --from "$R" --out "$T/debs" > "$T/debs.list"
echo "build-debs.sh --release trixie: $((SECONDS - started)) s"
cat "$T/debs.list"
arch=$(dpkg --print-architecture)
for p in ohiod libohio libohio-dev ohio-tools ohiod-dbgsym libohio-dbgsym ohio-tools-dbgsym; do
  grep -q "^$T/debs/${p}_.*_$arch.deb$" "$T/debs.list" || fail "build-debs.sh did not print the path of $p's package"
done
[ "$(wc -l < "$T/debs.list")" = 7 ] ||
  fail "Debian 13's set is the four packages and three -dbgsym ones, got: $(cat "$T/debs.list")"

# depends_on PACKAGE NAME...: the package's Depends names each NAME (with or without a version).
depends_of() { dpkg-deb -f "$(ls "$T"/debs/"$1"_*.deb)" Depends; }
depends_on() {
  local p=$1 d depends
  shift
  depends=$(depends_of "$p")
  for d in "$@"; do
    [[ ", $depends," == *", $d "* || ", $depends," == *", $d,"* ]] || fail "$p does not depend on $d: $depends"
  done
}
# not_depends_on PACKAGE NAME...: the package's Depends names no NAME.
not_depends_on() {
  local p=$1 d depends
  shift
  depends=$(depends_of "$p")
  for d in "$@"; do
    [[ ", $depends," != *", $d "* && ", $depends," != *", $d,"* ]] || fail "$p depends on $d: $depends"
  done
}
for p in ohiod libohio ohio-tools; do echo "$p Depends: $(depends_of "$p")"; done
# trixie's names: the 64-bit time_t rebuilds of gRPC and protobuf, Abseil 20240722, fmt 10,
# spdlog 1.15 (built with fmt 10), Open MPI 5's library package, MPICH's; none of Debian 12's.
depends_on ohiod munge libgrpc++1.51t64 libgrpc29t64 libabsl20240722 libprotobuf32t64 libfmt10 libspdlog1.15-fmt10 libmunge2
not_depends_on ohiod libgrpc++1.51 libgrpc29 libabsl20220623 libprotobuf32 libfmt9 libspdlog1.10
depends_on ohio-tools libgrpc++1.51t64 libopenmpi40 libmpich12
not_depends_on ohio-tools libgrpc++1.51 libopenmpi3
depends_on libohio libprotobuf32t64 libopenmpi40 libmpich12
not_depends_on libohio libprotobuf32 libopenmpi3
component=./usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi40/mca_coll_ohio.so
# Listed first: grep -q leaving a pipe early would fail the writer (pipefail).
dpkg-deb -c "$(ls "$T"/debs/libohio_*.deb)" > "$T/libohio.contents"
grep -q " $component$" "$T/libohio.contents" || fail "libohio does not hold $component: $(cat "$T/libohio.contents")"

# The run's directory: short, under /tmp (bound into the root at the same path).
W=$(mktemp -d /tmp/ohio-trixie-debs.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/debs" "$W/src/tests/mpi" "$W/out" "$ARCHIVES/partial"
cp "$T"/debs/*.deb "$W/debs/"
cp "$R"/tests/mpi/alltoall_check.c "$R"/tests/mpi/checked_calls.h "$R"/tests/mpi/ring_message.h "$W/src/tests/mpi/"
cp "$R/tests/trixie/served_by_installed.sh" "$W/"
in_root() {
  bash "$R/tests/trixie/in_root.sh" --overlay "$T/overlay" --bind "$W" --bind "$ARCHIVES" --cd "$W" -- \
    env DEBIAN_FRONTEND=noninteractive "$@"
}

# As a site installs them: apt resolves the packages' Debian 13 dependencies (munge among them)
# from Debian's mirror.
apt=(apt-get -o "Dir::Cache::archives=$ARCHIVES")
in_root "${apt[@]}" update > "$T/apt.out" 2>&1 || fail "apt-get update: $(cat "$T/apt.out")"
in_root "${apt[@]}" install -y --no-install-recommends "$W"/debs/{ohiod,libohio,libohio-dev,ohio-tools}_*.deb \
  > "$T/apt.out" 2>&1 || fail "apt-get install of the four packages: $(cat "$T/apt.out")"
in_root dpkg-query -W -f='${Package} ${Status}\n' ohiod libohio libohio-dev ohio-tools > "$T/status.out"
[ "$(grep -c ' install ok installed$' "$T/status.out")" = 4 ] || fail "not all four installed: $(cat "$T/status.out")"

upper=$T/overlay/upper
# Debian 13's debhelper installs units under /usr (Debian 12's under /lib).
unit=$upper/usr/lib/systemd/system/ohiod.service
[ -f "$unit" ] || fail "no /usr/lib/systemd/system/ohiod.service installed"
grep -qx "ExecStart=/usr/sbin/ohiod --config /etc/ohio/ohiod.conf" "$unit" || fail "the unit's $(grep ExecStart= "$unit")"
[ -L "$upper/etc/systemd/system/multi-user.target.wants/ohiod.service" ] || fail "the package did not enable ohiod.service"
for f in /usr/sbin/ohiod /usr/bin/ohioctl /usr/bin/ohio-plan /usr/lib/ohio/bench/alltoall_bench \
         /usr/lib/ohio/bench/mpi_alltoall_bench_openmpi /usr/lib/ohio/bench/mpi_ialltoall_bench_mpich; do
  [ -x "$upper$f" ] || fail "$f is not an installed executable"
done
[ -f "$upper/etc/ohio/ohiod.conf" ] || fail "/etc/ohio/ohiod.conf is not installed"
# Every library the installed programs need is there (a Debian 12 build would miss fmt 9's, ...).
in_root ldd /usr/sbin/ohiod /usr/bin/ohioctl /usr/bin/ohio-plan > "$T/ldd.out" 2>&1
! grep -q "not found" "$T/ldd.out" || fail "libraries the installed programs need are missing: $(grep 'not found' "$T/ldd.out")"
echo "installed: the four packages, the unit (enabled), the config, the programs with every library"

in_root ompi_info > "$T/ompi_info.out" 2>&1 || true
grep -q "MCA coll: ohio (MCA v2.1.0, API v2.4.0, Component v5" "$T/ompi_info.out" ||
  fail "Open MPI 5's ompi_info does not list the installed coll/ohio: $(grep 'MCA coll' "$T/ompi_info.out")"

served_started=$SECONDS
timeout 900 bash "$R/tests/trixie/in_root.sh" --overlay "$T/overlay" --bind "$W" --cd "$W" -- \
  bash "$W/served_by_installed.sh" "$W/out" "$W/src" > "$T/served.out" 2>&1 ||
  fail "in the root: $(cat "$T/served.out"; cat "$W/out/ohiod.log" 2>/dev/null)"
echo "munged, the installed ohiod and the two jobs: $((SECONDS - served_started)) s"

version=$(sed -n 's/.*kVersion\[\] = "\(.*\)";/\1/p' "$R/common/version.h")
grep -q "^ohiod $version" "$W/out/version.out" || fail "ohiod --version: $(cat "$W/out/version.out")"
grep -q -- "--config" "$W/out/help.out" || fail "ohiod --help does not name --config: $(cat "$W/out/help.out")"

# expect_served OUT BINDING: 4 ranks ALL OK, none WRONG, the calls served through BINDING; prints
# how many MPI_Alltoall calls the ranks counted served (all ranks together).
expect_served() {
  local out=$1 binding=$2 r served
  for r in 0 1 2 3; do grep -q "rank $r: ALL OK" "$out" || fail "rank $r not ALL OK: $(cat "$out")"; done
  ! grep -q WRONG "$out" || fail "a wrong byte: $(cat "$out")"
  grep -q "ohio: served through $binding" "$out" || fail "not served through $binding: $(cat "$out")"
  served=$(sed -n 's/^ohio: \([0-9]*\) MPI_Alltoall calls served by ohiod.*/\1/p' "$out")
  [ "${served:-0}" -gt 100 ] || fail "only '${served}' MPI_Alltoall calls served: $(cat "$out")"
  echo "$served"
}
# counter FILE NAME: a counter of ohioctl counters --json.
counter() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
served_openmpi=$(expect_served "$W/out/openmpi.out" "Open MPI's collective component coll/ohio")
served_mpich=$(expect_served "$W/out/mpich.out" "the LD_PRELOAD shim (libohio_mpi)")
after_openmpi=$(counter "$W/out/counters.openmpi.json" collectives_served)
after_mpich=$(counter "$W/out/counters.mpich.json" collectives_served)
echo "Open MPI 5: $served_openmpi MPI_Alltoall calls served (4 ranks), ohiod counts $after_openmpi collectives"
echo "MPICH 4.2: $served_mpich MPI_Alltoall calls served (4 ranks), ohiod counts $((after_mpich - after_openmpi)) more"
# ohiod counts a call of the group once, whichever rank made it.
[ "$after_openmpi" -ge $((served_openmpi / 4)) ] ||
  fail "ohiod counted $after_openmpi collectives served after the Open MPI job, its ranks $served_openmpi calls"
[ $((after_mpich - after_openmpi)) -ge $((served_mpich / 4)) ] ||
  fail "ohiod counted $((after_mpich - after_openmpi)) collectives served for the MPICH job, its ranks $served_mpich calls"
for f in counters.openmpi.json counters.mpich.json; do
  [ "$(counter "$W/out/$f" collectives_failed)" = 0 ] || fail "ohiod counted failed collectives: $(cat "$W/out/$f")"
done
[ "$(counter "$W/out/counters.mpich.json" bytes_local)" -gt 0 ] || fail "ohiod moved no bytes: $(cat "$W/out/counters.mpich.json")"
echo "PASS in $((SECONDS - started)) s"
