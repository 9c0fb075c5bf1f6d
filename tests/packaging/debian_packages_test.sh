#!/bin/bash
# deploy/build-debs.sh from the built files, lintian on its packages, then the packages' life on
# a node, for real with dpkg: install (files in place, the unit enabled, ohiod started by hand
# from the installed files answering ohioctl, Open MPI's ompi_info finding the installed
# coll/ohio, a program built with pkg-config ohio), upgrade to a newer version whose default
# config changed over an admin's edit (the edit kept, the new default beside it), remove (the
# config stays), purge (nothing left behind).
#
# dpkg runs in a chroot whose root is an overlayfs over this machine's /, in a private mount,
# network and PID namespace: every change dpkg makes lands in the overlay's upper directory,
# never on this machine, where other tests run meanwhile (an mca_coll_ohio.so in Open MPI's
# real directory would be loaded by every Open MPI job). The upper directory also shows what
# purge left behind.
set -euo pipefail
R="$TEST_SRCDIR/$TEST_WORKSPACE"
T="$TEST_TMPDIR"
PACKAGES=(ohiod libohio libohio-dev ohio-tools)
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "${1:-}" != --in-namespace ]; then
  V1=$(sed -n 's/.*kVersion\[\] = "\(.*\)";/\1/p' "$R/common/version.h")
  V2=$V1.1
  bash "$R/deploy/build-debs.sh" --from "$R" --out "$T/v1" > "$T/v1.list"
  cat "$T/v1.list"
  for p in "${PACKAGES[@]}"; do
    grep -qx "$T/v1/${p}_${V1}_$(dpkg --print-architecture).deb" "$T/v1.list" || fail "build-debs.sh did not print the path of $p's package"
  done

  # Overridden tags (deploy/debian/*.lintian-overrides, each with its reason) are not printed:
  # anything lintian prints at warning or error level is a problem nobody explained.
  lintian --fail-on none "$T"/v1/*.deb > "$T/lintian.out" 2>&1 || fail "lintian did not run: $(cat "$T/lintian.out")"
  cat "$T/lintian.out"
  ! grep -E '^(E|W): ' "$T/lintian.out" || fail "lintian: errors or warnings no override explains (above)"
  echo "lintian: no errors, no unexplained warnings"

  # The newer version ships a changed default config, so that the upgrade meets an admin's edit
  # of a conffile that changed: the case where dpkg must choose between the two.
  mkdir -p "$T/tree2"
  for f in deploy/build-debs.sh deploy/debian deploy/ohiod.conf deploy/ohiod.service deploy/slurm-prolog.sh \
           docs/OPERATIONS.md docs/SECURITY.md client/libohio/ohio.h client/libohio/ohio.hpp common/version.h; do
    mkdir -p "$T/tree2/$(dirname "$f")"
    cp -rL "$R/$f" "$T/tree2/$f"
  done
  echo "# the default config of version $V2" >> "$T/tree2/deploy/ohiod.conf"
  # No -dbgsym packages for the second build: the first one built them, and they take half the time.
  DEB_BUILD_OPTIONS=noautodbgsym bash "$T/tree2/deploy/build-debs.sh" --from "$R" --version "$V2" --out "$T/v2" > "$T/v2.list"
  cat "$T/v2.list"

  if [ -d /run/systemd/system ]; then
    echo "SKIP: systemd runs here, but ohiod is not started under its unit: the packages are installed in a private overlay that this machine's systemd cannot see, and never on this machine itself"
  else
    echo "SKIP: ohiod under its systemd unit: systemd is not PID 1 here (no /run/systemd/system); the packages' scripts enable the unit, and ohiod is started by hand from the installed files instead"
  fi
  exec unshare --mount --net --pid --fork --propagation private bash "$0" --in-namespace "$V1" "$V2"
fi

V1=$2
V2=$3
OVL=$T/overlay
UPPER=$OVL/upper
ROOT=$OVL/root
mkdir -p "$OVL"
# overlayfs refuses an upper directory inside its lower one (/): the upper lives on a tmpfs.
mount -t tmpfs -o size=2g ohio-packaging "$OVL"
mkdir "$UPPER" "$OVL/work" "$ROOT"
mount -t overlay overlay -o "lowerdir=/,upperdir=$UPPER,workdir=$OVL/work" "$ROOT"
mount -t proc proc "$ROOT/proc"
mount --rbind /dev "$ROOT/dev"
mount --rbind /sys "$ROOT/sys"
# /tmp and /run are tmpfs on a node: what is written there is no package's leftover.
mount -t tmpfs tmpfs "$ROOT/tmp"
mount -t tmpfs tmpfs "$ROOT/run"
ip link set lo up
mkdir "$ROOT/tmp/v1" "$ROOT/tmp/v2"
cp "$T"/v1/*.deb "$ROOT/tmp/v1/"
cp "$T"/v2/*.deb "$ROOT/tmp/v2/"

in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
# debs_of DIR: the four packages in the chroot's /tmp/DIR, as paths inside the chroot.
debs_of() {
  local d=$1 p f
  for p in "${PACKAGES[@]}"; do
    for f in "$ROOT/tmp/$d/${p}_"*.deb; do echo "${f#"$ROOT"}"; done
  done
}

# changes_to_root: what the chroot changed of /, read from the overlay's upper directory: its
# files and links, directories / does not have, and whiteouts (files deleted from /); not the
# directories copied up only to hold a change beneath them, and not dpkg's own database and log.
changes_to_root() {
  (cd "$UPPER" && find . -mindepth 1 \( -path ./var/lib/dpkg -o -path ./var/log/dpkg.log \) -prune -o -print) |
    sed 's|^\.||' | sort | while read -r p; do
      if [ -c "$UPPER$p" ] && [ "$(stat -c %t:%T "$UPPER$p")" = 0:0 ]; then echo "deleted $p"
      elif [ -d "$UPPER$p" ] && [ ! -h "$UPPER$p" ]; then [ -d "$p" ] || echo "new directory $p"
      else echo "written $p"; fi
    done
}

# Output captured first: grep -q leaving a pipe early would fail the writer (pipefail).
ompi_finds_ohio() { in_root ompi_info > "$T/ompi_info.out" 2>&1; grep -q "MCA coll: ohio" "$T/ompi_info.out"; }
version_of() { in_root dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }
status_of() { in_root dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | tr -d ' ' || true; }

# ohiod_answers: starts the installed ohiod with the installed config, its sockets in a directory
# of its own and no peer authentication (no munged here), and waits until the installed ohioctl
# says it is healthy; then stops it.
ohiod_answers() {
  local dir=/tmp/ohiod-run deadline=$(( SECONDS + 30 ))
  mkdir -p "$ROOT$dir"
  # Not through in_root, a function that would run in a subshell of its own: $! is ohiod itself.
  chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/sbin/ohiod --config /etc/ohio/ohiod.conf --socket "$dir/ohiod.sock" --admin-socket "$dir/admin.sock" \
    --auth none --listen 127.0.0.1 --node-name packaged 2> "$T/ohiod.log" &
  local pid=$!
  until in_root /usr/bin/ohioctl --socket "$dir/admin.sock" --timeout-ms 2000 health > "$T/health.out" 2>&1; do
    kill -0 $pid 2>/dev/null || { cat "$T/ohiod.log" >&2; fail "the installed ohiod exited"; }
    [ $SECONDS -lt $deadline ] || { cat "$T/health.out" "$T/ohiod.log" >&2; fail "the installed ohiod is not healthy within 30 s"; }
    sleep 0.2
  done
  in_root /usr/bin/ohioctl --socket "$dir/admin.sock" status > "$T/status.out" || fail "ohioctl status failed"
  grep -q "packaged" "$T/status.out" || fail "ohioctl status does not name the node: $(cat "$T/status.out")"
  kill $pid
  wait $pid || true
  rm -rf "${ROOT:?}$dir"
}

files_in_place() {
  local multiarch ompi
  multiarch=$(in_root dpkg-architecture -qDEB_HOST_MULTIARCH)
  ompi=$(in_root ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')
  for f in /usr/sbin/ohiod /usr/bin/ohioctl /usr/bin/ohio-plan /usr/share/ohio/slurm-prolog.sh \
           /usr/lib/ohio/bench/alltoall_bench /usr/lib/ohio/bench/mpi_alltoall_bench_openmpi \
           /usr/lib/ohio/bench/mpi_ialltoall_bench_mpich; do
    [ -x "$ROOT$f" ] || fail "$f is not an installed executable"
  done
  for f in /etc/ohio/ohiod.conf /lib/systemd/system/ohiod.service /usr/share/doc/ohiod/OPERATIONS.md \
           /usr/share/doc/ohiod/SECURITY.md "/usr/lib/$multiarch/libohio.so" "/usr/lib/$multiarch/libohio_mpi_openmpi.so" \
           "/usr/lib/$multiarch/libohio_mpi_mpich.so" "$ompi/mca_coll_ohio.so" /usr/include/ohio/ohio.h \
           /usr/include/ohio/ohio.hpp "/usr/lib/$multiarch/pkgconfig/ohio.pc"; do
    [ -f "$ROOT$f" ] || fail "$f is not installed"
  done
  local unit=$ROOT/lib/systemd/system/ohiod.service
  grep -qx "ExecStart=/usr/sbin/ohiod --config /etc/ohio/ohiod.conf" "$unit" || fail "the unit's $(grep ExecStart= "$unit")"
  doc=$(sed -n 's|^Documentation=file://||p' "$unit")
  [ -f "$ROOT$doc" ] || fail "the unit's Documentation $doc is not installed"
  grep -q 'OHIOCTL=${OHIOCTL:-/usr/bin/ohioctl}' "$ROOT/usr/share/ohio/slurm-prolog.sh" || fail "the prolog's ohioctl is not /usr/bin/ohioctl"
  in_root dpkg-query -W -f='${Conffiles}\n' ohiod > "$T/conffiles.out"
  grep -q '^ /etc/ohio/ohiod.conf ' "$T/conffiles.out" || fail "ohiod.conf is not a conffile: $(cat "$T/conffiles.out")"
  # Enabled by the package's scripts even where systemd does not run (deb-systemd-helper).
  [ -L "$ROOT/etc/systemd/system/multi-user.target.wants/ohiod.service" ] || fail "the package did not enable ohiod.service"
  ompi_finds_ohio || fail "ompi_info does not list the installed coll/ohio"
}

before=$(changes_to_root)
ompi_finds_ohio &&
  fail "Open MPI finds a coll/ohio before the packages are installed (deploy/install.sh into /usr?): the test cannot tell the package's apart"

echo "--- install $V1"
# shellcheck disable=SC2046  # one path per package
in_root dpkg -i $(debs_of v1) || fail "dpkg -i of version $V1"
for p in "${PACKAGES[@]}"; do
  [ "$(version_of "$p")" = "$V1" ] || fail "$p: installed version '$(version_of "$p")', not $V1"
done
files_in_place
in_root /usr/sbin/ohiod --version > "$T/version.out" && grep -q '^ohiod ' "$T/version.out" || fail "ohiod --version"
ohiod_answers
cat > "$ROOT/tmp/use.cc" <<'PROGRAM'
#include <ohio.hpp>
int main() {
  ohio_client* c = nullptr;
  // No daemon on this socket: the call must fail cleanly, with a message.
  int rc = ohio_connect("/nonexistent/ohiod.sock", &c);
  return rc == OHIO_OK ? 1 : 0;
}
PROGRAM
in_root sh -c 'c++ -std=c++17 $(pkg-config --cflags ohio) /tmp/use.cc $(pkg-config --libs ohio) -o /tmp/use' ||
  fail "a program does not build with pkg-config ohio against libohio-dev"
in_root /tmp/use || fail "the program linked against the installed libohio misbehaved"
echo "installed: files in place, unit enabled, ohiod healthy, ompi_info finds coll/ohio, pkg-config ohio builds"

echo "--- upgrade to $V2 over an admin's edit of ohiod.conf"
echo "timeout-ms = 5000" >> "$ROOT/etc/ohio/ohiod.conf"
# What `apt install` does with Dpkg::Options::=--force-confold: the admin's file stays, the new
# default goes beside it as ohiod.conf.dpkg-dist.
# shellcheck disable=SC2046
in_root dpkg -i --force-confold $(debs_of v2) < /dev/null || fail "dpkg -i of version $V2"
for p in "${PACKAGES[@]}"; do
  [ "$(version_of "$p")" = "$V2" ] || fail "$p: version '$(version_of "$p")' after the upgrade, not $V2"
done
grep -qx "timeout-ms = 5000" "$ROOT/etc/ohio/ohiod.conf" || fail "the upgrade replaced the admin's ohiod.conf"
grep -qx "# the default config of version $V2" "$ROOT/etc/ohio/ohiod.conf.dpkg-dist" || fail "no new default in ohiod.conf.dpkg-dist"
files_in_place
ohiod_answers
echo "upgraded: $V2 installed, the admin's config kept, the new default in ohiod.conf.dpkg-dist, ohiod healthy"

echo "--- remove"
in_root dpkg -r "${PACKAGES[@]}" || fail "dpkg -r"
for f in /usr/sbin/ohiod /usr/bin/ohioctl /lib/systemd/system/ohiod.service /usr/include/ohio; do
  [ ! -e "$ROOT$f" ] || fail "$f is still there after dpkg -r"
done
ompi_finds_ohio && fail "ompi_info still finds coll/ohio after dpkg -r"
grep -qx "timeout-ms = 5000" "$ROOT/etc/ohio/ohiod.conf" || fail "dpkg -r took the admin's config"
[ "$(status_of ohiod)" = rc ] || fail "ohiod's state after dpkg -r is '$(status_of ohiod)', not rc (removed, config kept)"
echo "removed: the programs gone, /etc/ohio/ohiod.conf kept"

echo "--- purge"
in_root dpkg -P "${PACKAGES[@]}" || fail "dpkg -P"
[ ! -e "$ROOT/etc/ohio" ] || fail "/etc/ohio is still there after dpkg -P: $(ls -A "$ROOT/etc/ohio")"
for p in "${PACKAGES[@]}"; do
  [ -z "$(status_of "$p")" ] || [ "$(status_of "$p")" = un ] || fail "$p's state after purge is '$(status_of "$p")'"
done
after=$(changes_to_root)
[ "$before" = "$after" ] || fail "purge left behind (changes to / since before the install):
$(diff <(echo "$before") <(echo "$after") | sed -n 's/^> /  /p')"
echo "purged: nothing of the packages left (dpkg's own database and log aside)"
echo "PASS"
