#!/bin/bash
# Builds ohio's daemon and tools inside the Debian 13 root (make-root.sh's, with
# make-build-root.sh's layer over it), with Debian 13's compiler and libraries, for
# deploy/build-debs.sh --release trixie. Prints the directory that holds what it built, laid out
# as bazel-bin (daemon/ohiod, client/ohioctl, ...).
#
#   tests/trixie/build-in-root.sh SRC TARGET...
#     SRC      ohio's source tree (copied: the build never writes into it)
#     TARGET   the files to build, as paths under bazel-bin (daemon/ohiod, client/ohio-plan, ...)
#
# A cold build (layer, then every target from nothing) takes many minutes on a small machine, so
# what it makes is kept: the built files under a key of the source's content, the layer and the
# targets, which a second run with the same source prints at once; and Bazel's output base, where
# a build after a change recompiles only what changed. All of it under /var/cache/ohio-test; runs
# take a lock, one at a time. Must run as root.
set -euo pipefail
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
PROG=build-in-root.sh
[ $# -ge 2 ] || { echo "$PROG: usage: $PROG SRC TARGET... (see the top of $0)" >&2; exit 2; }
SRC=$(cd "$1" && pwd)
shift
TARGETS=("$@")
[ -f "$SRC/WORKSPACE" ] || { echo "$PROG: $SRC is not ohio's source tree (no WORKSPACE)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$PROG: must run as root (chroot, overlay mounts)" >&2; exit 1; }

layer=$(bash "$HERE/make-build-root.sh")
cache=/var/cache/ohio-test/trixie-build
mkdir -p "$cache/built"
exec 9>"$cache.lock"
flock 9

# The source as Bazel sees it, always at the same path (Bazel's output base is named after the
# workspace's path: a fixed one keeps later builds incremental). Bazel's links and the history
# are not the source.
rsync -a --delete --exclude='/bazel-*' --exclude=/.git "$SRC/" "$cache/src/"
key=$( (cd "$cache/src" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
        cat "$layer.stamp"; echo "${TARGETS[*]}") | sha256sum | cut -c1-16)
out=$cache/built/$key
if [ -f "$out/complete" ]; then
  echo "$PROG: built before from this source ($out)" >&2
  echo "$out"
  exit 0
fi

started=$(date +%s)
labels=()
for t in "${TARGETS[@]}"; do labels+=("//$(dirname "$t"):$(basename "$t")"); done
# The tree's .bazelrc gives the options the project builds with. --batch: no Bazel server
# outlives the command in the root's mount namespace. Local spawns: the root's /tmp is a private
# tmpfs already, and sandboxes would nest namespaces. No bazel-* links in the copy.
bazel=(bazel --batch --output_user_root="$cache/bazel" --host_jvm_args=-Xmx1536m)
options=(--curses=no --color=no --spawn_strategy=local --symlink_prefix=/)
overlay=$(mktemp -d "${TMPDIR:-/tmp}/ohio-trixie-build.XXXXXX")
trap 'rm -rf "$overlay"' EXIT
bash "$HERE/in_root.sh" --overlay "$overlay" --layer "$layer" --bind "$cache" --cd "$cache/src" -- \
  "${bazel[@]}" build "${options[@]}" "${labels[@]}" >&2 ||
  { echo "$PROG: the build in the Debian 13 root failed" >&2; exit 1; }
bin=$(bash "$HERE/in_root.sh" --overlay "$overlay" --layer "$layer" --bind "$cache" --cd "$cache/src" -- \
  "${bazel[@]}" info "${options[@]}" bazel-bin 2>/dev/null)

rm -rf "$out.new"
for t in "${TARGETS[@]}"; do install -D -m 0755 "$bin/$t" "$out.new/$t"; done
touch "$out.new/complete"
rm -rf "$out"
mv "$out.new" "$out"
# Only the latest few builds are kept: each is a set of binaries with their debug information.
(cd "$cache/built" && ls -t | tail -n +4 | xargs -r rm -rf)
echo "$PROG: built ${TARGETS[*]} in the Debian 13 root in $(($(date +%s) - started)) s" >&2
echo "$out"
