#!/bin/bash
# Runs a command as root inside the Debian 13 root of tests/trixie/make-root.sh, in a mount
# namespace of its own (every mount below goes when the command ends, whatever ends it): /proc, /sys,
# this machine's /dev (with /dev/shm, where MPI libraries and ohio's ranks meet), a private /tmp,
# and each --bind directory at its own path, so that the paths of a test's files, and of the
# control sockets of the ohiods this machine runs, are the same inside as outside.
#
#   tests/trixie/in_root.sh [--bind DIR]... [--cd DIR] [--overlay DIR [--layer DIR]] -- COMMAND [ARG]...
#     --bind DIR     this machine's DIR, at DIR inside
#     --cd DIR       the command's working directory inside (default /)
#     --overlay DIR  the root as an overlay whose changes land in DIR/upper (DIR/work beside
#                    it): dpkg may install into it and the cached root stays as it was
#     --layer DIR    with --overlay: DIR (make-build-root.sh's layer, ohio's build tools) over
#                    the root, under DIR/upper
set -euo pipefail
root=/var/cache/ohio-test/trixie-root
binds=()
overlay=
layer=
cwd=/
while [ $# -gt 0 ]; do
  case $1 in
    --bind) binds+=("$(cd "$2" && pwd)"); shift 2 ;;
    --cd) cwd=$2; shift 2 ;;
    --overlay) overlay=$2; shift 2 ;;
    --layer) layer=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "in_root.sh: unknown argument '$1' (see the top of $0)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "in_root.sh: no command (see the top of $0)" >&2; exit 2; }
[ -z "$layer" ] || [ -n "$overlay" ] || { echo "in_root.sh: --layer needs --overlay" >&2; exit 2; }
[ -z "$layer" ] || [ -d "$layer" ] || { echo "in_root.sh: no layer at $layer" >&2; exit 1; }
[ -x "$root/usr/bin/mpirun.openmpi" ] ||
  { echo "in_root.sh: no Debian 13 root at $root: run tests/trixie/make-root.sh first" >&2; exit 1; }

if [ "${OHIO_IN_ROOT_NAMESPACE:-}" != 1 ]; then
  export OHIO_IN_ROOT_NAMESPACE=1
  args=()
  for b in "${binds[@]}"; do args+=(--bind "$b"); done
  [ -z "$overlay" ] || args+=(--overlay "$overlay")
  [ -z "$layer" ] || args+=(--layer "$layer")
  args+=(--cd "$cwd")
  exec unshare --mount --propagation private bash "$0" "${args[@]}" -- "$@"
fi

if [ -n "$overlay" ]; then
  mkdir -p "$overlay/upper" "$overlay/work" "$overlay/merged"
  mount -t overlay overlay -o "lowerdir=${layer:+$layer:}$root,upperdir=$overlay/upper,workdir=$overlay/work" "$overlay/merged"
  root=$overlay/merged
fi
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
for b in "${binds[@]}"; do
  # Inside /tmp the mount point is made in the private tmpfs; elsewhere in the root itself.
  mkdir -p "$root$b"
  mount --bind "$b" "$root$b"
done
cd /
# A home and a temporary directory that exist inside (a test runner points both elsewhere).
exec chroot "$root" /usr/bin/env --chdir="$cwd" -u OHIO_IN_ROOT_NAMESPACE PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C HOME=/root \
  TMPDIR=/tmp "$@"
