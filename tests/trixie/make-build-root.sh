#!/bin/bash
# Builds (once) the layer that turns the Debian 13 root of make-root.sh into a root ohio's daemon
# and tools build in with Bazel against Debian 13's own gRPC, protobuf, Abseil, spdlog and fmt
# (deploy/build-debs.sh --release trixie, through build-in-root.sh). The layer is an overlay's
# upper directory over the test root, which stays as the tests need it: in_root.sh --layer
# mounts it. It is cached outside the repository; a stamp next to it records the package list
# and the test root it was made over, and either changing builds it again. apt's downloads are
# kept beside it, so that a rebuild of the layer downloads nothing already fetched.
#
#   tests/trixie/make-build-root.sh [--mirror URL]   prints the layer's path last
#
# Must run as root. Builds the test root first when it is missing or out of date.
set -euo pipefail
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)

layer=/var/cache/ohio-test/trixie-build-layer
archives=/var/cache/ohio-test/trixie-apt-archives
root_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --mirror) root_args+=(--mirror "$2"); shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "make-build-root.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "make-build-root.sh: must run as root (chroot, overlay mounts)" >&2; exit 1; }

# What ohiod, ohioctl, ohio-plan and the benchmarks build with (deploy/install-deps.sh's build
# list, by Debian 13's names); the MPIs and the compilers are the test root's already.
PACKAGES=(
  bazel-bootstrap g++ protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev
  libabsl-dev libspdlog-dev libfmt-dev libhwloc-dev libibverbs-dev librdmacm-dev libsystemd-dev
  libcli11-dev nlohmann-json3-dev libmunge-dev
)

root=$(bash "$HERE/make-root.sh" "${root_args[@]}")
stamp_text() {
  printf 'packages %s\nroot %s\nroot built %s\n' "${PACKAGES[*]}" "$root" "$(stat -c %Y "$root.stamp")"
  cat "$root.stamp"
}
stamp=$layer.stamp

exec 9>"$layer.lock"
flock 9
if [ -d "$layer" ] && [ -f "$stamp" ] && diff -q <(stamp_text) "$stamp" >/dev/null; then
  echo "make-build-root.sh: $layer is up to date ($stamp)" >&2
  echo "$layer"
  exit 0
fi

started=$(date +%s)
building=$layer.new
rm -rf "$building"
mkdir -p "$building" "$archives/partial"
in_build() {
  bash "$HERE/in_root.sh" --overlay "$building" --bind "$archives" -- \
    env DEBIAN_FRONTEND=noninteractive "$@"
}
apt_options=(-o "Dir::Cache::archives=$archives")
in_build apt-get update >&2
in_build apt-get install -y --no-install-recommends "${apt_options[@]}" "${PACKAGES[@]}" >&2
# The package lists and the bind's mount point are not the layer's to keep.
rm -rf "$building"/upper/var/lib/apt/lists/* "$building/upper${archives%/*}"
rm -rf "$layer"
mv "$building/upper" "$layer"
rm -rf "$building"
stamp_text >"$stamp"
echo "make-build-root.sh: built $layer in $(($(date +%s) - started)) s, $(du -sh "$layer" | cut -f1)" >&2
echo "$layer"
