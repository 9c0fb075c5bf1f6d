#!/bin/bash
# Builds ohio's Debian packages from files Bazel built: ohiod (daemon, systemd unit, config,
# Slurm prolog, docs), libohio (client library, MPI shims, Open MPI's component coll/ohio),
# libohio-dev (headers, pkg-config file) and ohio-tools (ohioctl, ohio-plan, benchmarks), with
# their -dbgsym packages (the debug information Bazel keeps). Prints the paths of the .debs.
#
# usage: deploy/build-debs.sh [--from DIR] [--version V] [--out DIR]
#   --from DIR     take the built files from DIR, laid out as bazel-bin (daemon/ohiod,
#                  client/ohioctl, client/libohio.so, ...), as install.sh's --from; default:
#                  build them with Bazel in this tree
#   --version V    the packages' version (default: ohio's, common/version.h)
#   --out DIR      where the .debs go (default: the current directory)
#
# Needs dpkg-dev and debhelper (deploy/install-deps.sh). Then, on a node:
#   apt install ./ohiod_*.deb ./libohio_*.deb ./ohio-tools_*.deb   (+ ./libohio-dev_*.deb)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
PROG=build-debs.sh

FROM=
VERSION=
OUT=.
while [ $# -gt 0 ]; do
  case "$1" in
    --from) FROM=$2; shift 2 ;;
    --from=*) FROM=${1#*=}; shift ;;
    --version) VERSION=$2; shift 2 ;;
    --version=*) VERSION=${1#*=}; shift ;;
    --out) OUT=$2; shift 2 ;;
    --out=*) OUT=${1#*=}; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "$PROG: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$VERSION" ] || VERSION=$(sed -n 's/.*kVersion\[\] = "\(.*\)";/\1/p' "$SRC/common/version.h")
# A native package's version: no Debian revision, since the packaging lives in the tree.
case "$VERSION" in
  [0-9]*) ;;
  *) echo "$PROG: --version must start with a digit, got '$VERSION'" >&2; exit 2 ;;
esac
case "$VERSION" in
  *-*|*[!0-9A-Za-z.+~]*) echo "$PROG: --version '$VERSION': only digits, letters and . + ~ (no -)" >&2; exit 2 ;;
esac

BUILT=(daemon/ohiod client/ohioctl client/ohio-plan client/libohio.so client/libohio_mpi_openmpi.so
       client/libohio_mpi_mpich.so client/openmpi_coll/mca_coll_ohio.so tests/bench/alltoall_bench
       tests/bench/mpi_alltoall_bench_openmpi tests/bench/mpi_alltoall_bench_mpich
       tests/bench/mpi_ialltoall_bench_openmpi tests/bench/mpi_ialltoall_bench_mpich)
if [ -z "$FROM" ]; then
  # shellcheck source=deploy/lib/bazel-build.sh
  source "$SRC/deploy/lib/bazel-build.sh"
  targets=()
  for f in "${BUILT[@]}"; do targets+=("//$(dirname "$f"):$(basename "$f")"); done
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  cd "$SRC"
  bazel_build_retrying "$PROG" "${targets[@]}"
  FROM=$BAZEL_BIN
fi
for f in "${BUILT[@]}"; do
  [ -f "$FROM/$f" ] || { echo "$PROG: $FROM/$f is missing (build it, or fix --from)" >&2; exit 1; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# dpkg-buildpackage builds in a directory with debian/ at its top and writes the packages
# beside it: a private one, with the tree's files in their places and the built ones in
# prebuilt/ (debian/rules installs them from there).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ohio-debs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STAGE=$WORK/ohio-$VERSION
mkdir -p "$STAGE"
cp -rL "$SRC/deploy/debian" "$STAGE/debian"
for f in "${BUILT[@]}"; do
  install -D -m 0755 "$FROM/$f" "$STAGE/prebuilt/$f"
done
for f in client/libohio/ohio.h client/libohio/ohio.hpp deploy/ohiod.conf deploy/ohiod.service \
         deploy/slurm-prolog.sh docs/OPERATIONS.md docs/SECURITY.md; do
  install -D -m 0644 "$SRC/$f" "$STAGE/$f"
done

# The changelog carries the version; what it was built from is the tree's commit, when known.
commit=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || true)
cat > "$STAGE/debian/changelog" <<EOF
ohio ($VERSION) unstable; urgency=medium

  * Built from the ohio tree${commit:+ at commit $commit} by deploy/build-debs.sh.

 -- ${DEBFULLNAME:-ohio maintainers} <${DEBEMAIL:-ohio-maintainers@example.org}>  $(date -R)
EOF

# -us -uc: nothing to sign with here; the packages are installed from files, not an archive.
(cd "$STAGE" && dpkg-buildpackage -b -us -uc) > "$WORK/build.log" 2>&1 || {
  cat "$WORK/build.log" >&2
  echo "$PROG: dpkg-buildpackage failed" >&2
  exit 1
}
debs=("$WORK"/*.deb)
mv "${debs[@]}" "$OUT/"
for d in "${debs[@]}"; do echo "$OUT/$(basename "$d")"; done
