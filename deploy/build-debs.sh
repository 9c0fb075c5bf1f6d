#!/bin/bash
# Builds ohio's Debian packages from files Bazel built: ohiod (daemon, systemd unit, config,
# Slurm prolog, docs), libohio (client library, MPI shims, Open MPI's component coll/ohio),
# libohio-dev (headers, pkg-config file) and ohio-tools (ohioctl, ohio-plan, benchmarks), with
# their -dbgsym packages (the debug information Bazel keeps). Prints the paths of the .debs.
#
# usage: deploy/build-debs.sh [--release R] [--from DIR] [--version V] [--out DIR] [--prepare]
#   --release R    the Debian release the packages are for: bookworm (12, the default) or
#                  trixie (13). For trixie, ohiod, ohioctl, ohio-plan and the benchmarks are
#                  built inside the Debian 13 root of tests/trixie/make-root.sh, with Debian 13's
#                  gRPC, Abseil, spdlog and fmt (tests/trixie/build-in-root.sh, from the tree
#                  this script is in, whatever --from says), coll/ohio is the one built for
#                  Open MPI 5.0, and the packages are made in that root, so that their
#                  dependencies are named as trixie names them
#   --from DIR     take the built files from DIR, laid out as bazel-bin (daemon/ohiod,
#                  client/ohioctl, client/libohio.so, ...), as install.sh's --from; default:
#                  build them with Bazel in this tree
#   --version V    the packages' version (default: ohio's, common/version.h)
#   --out DIR      where the .debs go (default: the current directory)
#   --prepare      with --release trixie: only make (or find made) what the packages need besides
#                  the files of --from: the Debian 13 root, its build layer, the daemon and the
#                  tools built in it; then stop, printing nothing. tests/run.sh runs this in
#                  the background while the groups before the Debian 13 one run
#
# Needs dpkg-dev and debhelper (deploy/install-deps.sh); for trixie, root and the Debian 13 root
# (tests/trixie/make-root.sh, which has them). Then, on a node:
#   apt install ./ohiod_*.deb ./libohio_*.deb ./ohio-tools_*.deb   (+ ./libohio-dev_*.deb)
#
# For trixie, measured as root on a loaded 2-core machine: the first run builds the Debian 13
# root's build layer (about 3 minutes), ohiod and the tools in it (about 23 minutes) and the
# packages (about 5 minutes, most of it compressing the -dbgsym packages). All three are cached
# under /var/cache/ohio-test, the build and the packages by what they are made of: a run with
# nothing changed takes about 1 minute; after a change to the daemon, Bazel's kept output base
# rebuilds what changed (97 s for two files) and the packages are made again.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
PROG=build-debs.sh

RELEASE=bookworm
FROM=
VERSION=
OUT=.
PREPARE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --release) RELEASE=$2; shift 2 ;;
    --release=*) RELEASE=${1#*=}; shift ;;
    --from) FROM=$2; shift 2 ;;
    --from=*) FROM=${1#*=}; shift ;;
    --version) VERSION=$2; shift 2 ;;
    --version=*) VERSION=${1#*=}; shift ;;
    --out) OUT=$2; shift 2 ;;
    --out=*) OUT=${1#*=}; shift ;;
    --prepare) PREPARE=1; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
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

# What each release's packages are made of, and where Bazel puts coll/ohio built for its Open MPI
# (staged as client/openmpi_coll/mca_coll_ohio.so either way). The client libraries link only
# libc, libstdc++ and protobuf 3.21, which both releases have: built here. The daemon and the
# tools link gRPC, Abseil, spdlog and fmt, which Debian 13 has in other versions: for trixie
# they are built inside its root (IN_ROOT).
DAEMON_AND_TOOLS=(daemon/ohiod client/ohioctl client/ohio-plan tests/bench/alltoall_bench
                  tests/bench/mpi_alltoall_bench_openmpi tests/bench/mpi_alltoall_bench_mpich
                  tests/bench/mpi_ialltoall_bench_openmpi tests/bench/mpi_ialltoall_bench_mpich)
CLIENT=(client/libohio.so client/libohio_mpi_openmpi.so client/libohio_mpi_mpich.so)
case "$RELEASE" in
  bookworm)
    COMPONENT=client/openmpi_coll/mca_coll_ohio.so
    BUILT=("${CLIENT[@]}" "$COMPONENT" "${DAEMON_AND_TOOLS[@]}")
    IN_ROOT=() ;;
  trixie)
    COMPONENT=client/openmpi_coll/openmpi5/mca_coll_ohio.so
    BUILT=("${CLIENT[@]}" "$COMPONENT")
    IN_ROOT=("${DAEMON_AND_TOOLS[@]}") ;;
  *) echo "$PROG: --release must be bookworm or trixie, got '$RELEASE'" >&2; exit 2 ;;
esac
# The tree this script's own file is in (a test runs it through a link to it), built from in the
# Debian 13 root: the build there takes the whole source, not files Bazel staged.
TREE=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
if [ "$PREPARE" = 1 ]; then
  [ "$RELEASE" = trixie ] ||
    { echo "$PROG: --prepare is for --release trixie (bookworm's packages need nothing besides --from)" >&2; exit 2; }
  # build-in-root.sh makes the root and its layer first; all three keep what they made.
  bash "$TREE/tests/trixie/build-in-root.sh" "$TREE" "${IN_ROOT[@]}" > /dev/null
  exit 0
fi
if [ -z "$FROM" ]; then
  # shellcheck source=deploy/lib/bazel-build.sh
  source "$SRC/deploy/lib/bazel-build.sh"
  # coll/ohio for Open MPI 5.0 is built against the Debian 13 root's headers (WORKSPACE's openmpi5).
  [ "$RELEASE" != trixie ] || bash "$SRC/tests/trixie/make-root.sh" > /dev/null
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
if [ ${#IN_ROOT[@]} -gt 0 ]; then
  ROOT_BUILT=$(bash "$TREE/tests/trixie/build-in-root.sh" "$TREE" "${IN_ROOT[@]}")
fi

# dpkg-buildpackage builds in a directory with debian/ at its top and writes the packages
# beside it: a private one, with the tree's files in their places and the built ones in
# prebuilt/ (debian/rules installs them from there).
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ohio-debs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
STAGE=$WORK/ohio-$VERSION
mkdir -p "$STAGE"
cp -rL "$SRC/deploy/debian" "$STAGE/debian"
for f in "${BUILT[@]}"; do
  [ "$f" = "$COMPONENT" ] || install -D -m 0755 "$FROM/$f" "$STAGE/prebuilt/$f"
done
for f in "${IN_ROOT[@]}"; do install -D -m 0755 "$ROOT_BUILT/$f" "$STAGE/prebuilt/$f"; done
install -D -m 0755 "$FROM/$COMPONENT" "$STAGE/prebuilt/client/openmpi_coll/mca_coll_ohio.so"
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
# Debian 13's are built inside its root, with the build layer whose libraries the daemon and the
# tools link: dpkg-shlibdeps names their packages there (the overlay takes what the build writes,
# and goes with WORK).
if [ "$RELEASE" = trixie ]; then
  layer=$(bash "$TREE/tests/trixie/make-build-root.sh")
  build=(bash "$TREE/tests/trixie/in_root.sh" --overlay "$WORK/root" --layer "$layer" --bind "$WORK"
         --cd "$STAGE" -- dpkg-buildpackage -b -us -uc)
else
  build=(dpkg-buildpackage -b -us -uc)
fi

# Debian 13's packages take minutes to make (most of it compressing the -dbgsym packages), so
# they are kept by what they are made of: the staged tree (but the changelog's date), the build
# layer, DEB_BUILD_OPTIONS. A run with nothing changed (a test's, say) takes the kept ones.
kept=
if [ "$RELEASE" = trixie ]; then
  key=$( (cd "$STAGE" && find . -type f ! -path ./debian/changelog -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
          echo "$VERSION ${DEB_BUILD_OPTIONS:-}"; cat "$layer.stamp") | sha256sum | cut -c1-16)
  kept=/var/cache/ohio-test/trixie-debs/$key
  # One run at a time makes or takes them: two runs of one tree do not both make them.
  mkdir -p "${kept%/*}"
  exec 8>"${kept%/*}.lock"
  flock 8
fi
if [ -n "$kept" ] && [ -f "$kept/complete" ]; then
  echo "$PROG: the packages of this tree were built before ($kept)" >&2
  cp "$kept"/*.deb "$WORK/"
else
  (cd "$STAGE" && "${build[@]}") > "$WORK/build.log" 2>&1 || {
    cat "$WORK/build.log" >&2
    echo "$PROG: dpkg-buildpackage failed" >&2
    exit 1
  }
  if [ -n "$kept" ]; then
    rm -rf "$kept.new"
    mkdir -p "$kept.new"
    cp "$WORK"/*.deb "$kept.new/"
    touch "$kept.new/complete"
    rm -rf "$kept"
    mv "$kept.new" "$kept"
    # The latest few sets only: each is some 45 MB.
    (cd "${kept%/*}" && ls -t | tail -n +4 | xargs -r rm -rf)
  fi
fi
debs=("$WORK"/*.deb)
mv "${debs[@]}" "$OUT/"
for d in "${debs[@]}"; do echo "$OUT/$(basename "$d")"; done
