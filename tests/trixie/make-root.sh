#!/bin/bash
# Builds (once) a Debian 13 (trixie) root with trixie's Open MPI 5.0 and MPICH 4.2, for the tests
# in tests/trixie, for building coll/ohio against Open MPI 5's headers (WORKSPACE's openmpi5
# repository reads them at this root's fixed path) and for building the Debian 13 packages
# (deploy/build-debs.sh --release trixie). The root is cached outside the repository; a stamp
# file next to it records the package list it was built with, and a different list builds it
# again.
#
#   tests/trixie/make-root.sh [--mirror URL]   prints the root's path last
#
# Must run as root (debootstrap, chroot). Builds into DIR.new and renames it, under a lock, so a
# build that stops half way leaves no root that looks finished and two runs do not both build.
set -euo pipefail

root=/var/cache/ohio-test/trixie-root
mirror=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
  case $1 in
    --mirror) mirror=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make-root.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "make-root.sh: must run as root (debootstrap, chroot)" >&2; exit 1; }
command -v debootstrap >/dev/null ||
  { echo "make-root.sh: debootstrap is missing (deploy/install-deps.sh installs it)" >&2; exit 1; }

PACKAGES=(
  # the two MPIs, their compiler wrappers and launchers
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  # tests/mpi's C and Fortran programs are compiled inside the root with mpicc and mpifort
  gcc gfortran
  # tests/mpi/mpi4py_check.py (trixie's mpi4py is linked to Open MPI)
  python3 python3-mpi4py
  # what libohio links besides libc and libstdc++: protobuf 3.21, as on Debian 12 (soname 32)
  libprotobuf32t64
  # deploy/build-debs.sh --release trixie runs dpkg-buildpackage here, so that the packages'
  # dependencies are named as trixie names them (dpkg-shlibdeps); it insists on build-essential
  build-essential dpkg-dev debhelper
)
# Headers that Open MPI 5's own (opal_config.h, op.h) include but trixie's libopenmpi-dev leaves
# out: without them no component compiles against the packaged headers. Taken from the source
# package of the installed version and put beside the packaged ones.
MISSING_OPENMPI_HEADERS=(
  'opal/mca/threads/pthreads/*.h' 'opal/mca/timer/linux/*.h' 'ompi/mpi/fortran/base/fint_2_int.h'
)
# Installed when the archive lets it: the tests that need it say so when it is missing.
OPTIONAL_PACKAGES=(quantum-espresso)

stamp_text() {
  printf 'suite trixie\nmirror %s\npackages %s\noptional %s\nopenmpi headers %s\n' \
    "$mirror" "${PACKAGES[*]}" "${OPTIONAL_PACKAGES[*]}" "${MISSING_OPENMPI_HEADERS[*]}"
}
stamp=$root.stamp

mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
flock 9

if [ -d "$root" ] && [ -f "$stamp" ] && diff -q <(stamp_text) <(grep -v '^installed-optional' "$stamp") >/dev/null; then
  echo "make-root.sh: $root is up to date ($stamp)" >&2
  echo "$root"
  exit 0
fi

building=$root.new
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
rm -rf "$building"

started=$(date +%s)
echo "make-root.sh: debootstrap trixie into $building from $mirror" >&2
debootstrap --variant=minbase trixie "$building" "$mirror" >&2

# apt inside the root needs the host's name service and /proc; no daemon may start there.
cp /etc/resolv.conf "$building/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$building/usr/sbin/policy-rc.d"
chmod 755 "$building/usr/sbin/policy-rc.d"
mount -t proc proc "$building/proc" && mounted+=("$building/proc")
in_root() { chroot "$building" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
in_root apt-get update >&2
in_root apt-get install -y --no-install-recommends "${PACKAGES[@]}" >&2
installed_optional=()
for p in "${OPTIONAL_PACKAGES[@]}"; do
  if in_root apt-get install -y --no-install-recommends "$p" >&2; then
    installed_optional+=("$p")
  else
    echo "make-root.sh: optional package $p did not install; its tests will say so" >&2
  fi
done

ompi_source=$(in_root dpkg-query -W -f='${source:Package}=${source:Version}' libopenmpi-dev)
ompi_include=$building/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi
echo "deb-src $mirror trixie main" >"$building/etc/apt/sources.list.d/sources.list"
in_root apt-get update >&2
mkdir -p "$building/tmp/openmpi-source"
in_root sh -c "cd /tmp/openmpi-source && apt-get source --download-only '$ompi_source'" >&2
tar -xJf "$building"/tmp/openmpi-source/*.orig.tar.xz -C "$ompi_include" --strip-components=1 \
  --wildcards "${MISSING_OPENMPI_HEADERS[@]/#/*/}"
rm -rf "$building/tmp/openmpi-source" "$building/etc/apt/sources.list.d/sources.list"
in_root apt-get update >&2
in_root apt-get clean
cleanup
mounted=()

rm -rf "$root"
mv "$building" "$root"
{ stamp_text; echo "installed-optional ${installed_optional[*]}"; } >"$stamp"
echo "make-root.sh: built $root in $(($(date +%s) - started)) s, $(du -sh "$root" | cut -f1)" >&2
echo "$root"
