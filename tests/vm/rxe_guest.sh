#!/bin/bash
# rxe_guest.sh CMD [ARGS...]
#
# Runs CMD, a program of this host, as root inside a throwaway QEMU guest that has real RDMA
# verbs: Debian's own kernel with Soft-RoCE (rdma_rxe) and two devices joined by a veth pair
#
#     rxe0 -- veth0 10.77.0.1/24  <====>  veth1 10.77.0.2/24 -- rxe1
#
# The machines we build on have no HCA and their kernel has no InfiniBand support; the guest's
# root is this host's root (read-only over 9p, writable through a tmpfs overlay that is thrown
# away), so whatever was built here, Bazel outputs included, runs there unchanged at the same
# path. CMD gets the caller's exported environment and working directory, stdin /dev/null and
# `ulimit -l unlimited`; its stdout and stderr (pipes in the guest, not terminals) come back on
# ours, and its exit status is ours.
#
# Exit status: CMD's own, or
#   124  CMD did not finish within OHIO_VM_TIMEOUT (or the guest hung)
#   125  the guest failed to boot or to set up the devices (the console tail is printed)
#
# Settings (environment):
#   OHIO_VM_TIMEOUT  seconds CMD may run, boot not included            (default 600)
#   OHIO_VM_MEM      guest memory; half of it is the writable overlay  (default 2G)
#   OHIO_VM_CPUS     vCPUs                                             (default 2)
#   OHIO_VM_RW       colon-separated host directories shared read-write at the same path in the
#                    guest; everything else the guest writes is lost when it stops
#   OHIO_VM_CACHE    where the kernel and initramfs are kept   (default /tmp/ohio-rxe-vm-cache)
#   OHIO_VM_KVER     kernel version under /lib/modules          (default: the newest)
#   OHIO_VM_ACCEL    tcg or kvm                                 (default tcg, see below)
#   OHIO_VM_TB_MB    TCG translation cache in MB                (default 256)
#   OHIO_VM_DEBUG=1  print the guest console, dmesg and boot timing afterwards
#
# Facts this relies on (docs: /work/shared/notes/softroce-vm.md):
# - /dev/kvm on our build machines is a nested PVM that cannot boot a stock kernel, so the guest
#   is emulated (TCG, multi-threaded). TCG's code cache is capped or QEMU takes ~750 MB.
# - The uncompressed vmlinux boots through its PVH entry: no decompression under emulation.
# - rdma_rxe needs crc32_generic loaded first ("failed to init crc32" otherwise).
# - rxe in kernel 6.1 listens only in the root network namespace: both devices live there.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")

# The guest mounts the per-run control directory here (inside the chroot).
GUEST_CTL=/run/ohio-vm

# ------------------------------------------------------------------------------------------------
# Inside the guest. The initramfs has mounted the overlay root, chrooted into it and runs this
# same file (the host's copy, over 9p) as `rxe_guest.sh --in-guest`. Its own stdout/stderr are
# the console; CMD's go to the second and third serial ports, which the host reads.
# ------------------------------------------------------------------------------------------------
# fe80::/64 address of a MAC by EUI-64 (universal/local bit flipped, ff:fe in the middle).
link_local() {
  local m
  IFS=: read -r -a m <<< "$1"
  printf 'fe80::%x:%x:%x:%x\n' $(((0x${m[0]} ^ 2) << 8 | 0x${m[1]})) $((0x${m[2]} << 8 | 0xff)) \
    $((0xfe00 | 0x${m[3]})) $((0x${m[4]} << 8 | 0x${m[5]}))
}

in_guest() {
  export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
  local ctl=$GUEST_CTL
  # Progress goes to the kernel log only (notice level: below the console's loglevel); errors
  # also reach the console, whose tail the host prints when the guest fails.
  say() { echo "<5>ohio-vm: $*" > /dev/kmsg; }
  complain() { echo "<3>ohio-vm: $*" > /dev/kmsg; dmesg > "$ctl/dmesg" 2>/dev/null; }
  trap 'complain "guest set-up failed at line $LINENO: $BASH_COMMAND"' ERR
  say "guest stage started"

  # Registering buffers pins memory; CMD and everything it starts inherit this.
  ulimit -l unlimited

  # The host's modprobe and /lib/modules, through the 9p root.
  modprobe -a crc32_generic ib_core ib_uverbs rdma_rxe rdma_ucm veth

  ip link set lo up
  # No duplicate address detection on the pair: otherwise each end's link-local IPv6 address
  # (what GID index 0 stands for) stays "tentative" for a second or two after the link comes up,
  # does not answer neighbour solicitations meanwhile, and a queue pair's RTR to it times out.
  sysctl -qw net.ipv6.conf.default.accept_dad=0
  ip link add veth0 type veth peer name veth1
  ip addr add 10.77.0.1/24 dev veth0
  ip addr add 10.77.0.2/24 dev veth1
  ip link set veth0 up
  ip link set veth1 up

  # Both addresses are local, so by default the kernel would deliver 10.77.0.1 -> .2 over lo and
  # rxe would never see it. Route each one out of the other end of the pair instead (for
  # locally generated traffic only), accept packets that arrive from one of our own addresses,
  # and consult the local table only after these rules. Only the IPv4 GIDs (index 1) need this;
  # the link-local IPv6 GIDs (index 0) are scoped to their device and cross the veth anyway.
  local d
  for d in all default veth0 veth1; do
    sysctl -qw "net.ipv4.conf.$d.accept_local=1" "net.ipv4.conf.$d.rp_filter=0"
  done
  ip rule add pref 10 iif lo to 10.77.0.2 lookup 100
  ip route add 10.77.0.2 dev veth0 src 10.77.0.1 table 100
  ip rule add pref 10 iif lo to 10.77.0.1 lookup 101
  ip route add 10.77.0.1 dev veth1 src 10.77.0.2 table 101
  ip rule add pref 20 lookup local
  ip rule del pref 0 lookup local
  # Each end's neighbour entries for the other, permanent, IPv4 (GID index 1) and link-local
  # IPv6 (GID index 0, the EUI-64 of the MAC as the kernel forms it): a queue pair's RTR
  # resolves the peer's MAC through them, and right after boot a first resolution once took
  # longer than the kernel waits (CI: "modify_qp RTR: Connection timed out" after 1 s, in the
  # smoke test's first connection across the pair, which uses GID index 0). Tests that need an
  # unresolved neighbour remove an entry and put it back.
  local mac0 mac1
  mac0=$(cat /sys/class/net/veth0/address)
  mac1=$(cat /sys/class/net/veth1/address)
  ip neigh replace 10.77.0.2 lladdr "$mac1" dev veth0 nud permanent
  ip neigh replace 10.77.0.1 lladdr "$mac0" dev veth1 nud permanent
  ip -6 neigh replace "$(link_local "$mac1")" lladdr "$mac1" dev veth0 nud permanent
  ip -6 neigh replace "$(link_local "$mac0")" lladdr "$mac0" dev veth1 nud permanent

  rdma link add rxe0 type rxe netdev veth0
  rdma link add rxe1 type rxe netdev veth1

  # Ready = both ports ACTIVE and both IPv4 GIDs (::ffff:10.77.0.x) in the table; the GID table
  # is filled asynchronously after `rdma link add`.
  local dev ready=0 i
  for i in $(seq 400); do
    ready=1
    for dev in rxe0 rxe1; do
      grep -q ACTIVE "/sys/class/infiniband/$dev/ports/1/state" 2>/dev/null || ready=0
      grep -q ':ffff:0a4d:' "/sys/class/infiniband/$dev/ports/1/gids/1" 2>/dev/null || ready=0
    done
    [ "$ready" = 1 ] && break
    sleep 0.05
  done
  if [ "$ready" != 1 ]; then
    rdma link show || true
    complain "rxe0 and rxe1 did not become ready (ACTIVE, with an IPv4 GID)"
    trap - ERR
    return 1
  fi
  cut -d' ' -f1 /proc/uptime > "$ctl/ready_at"
  say "rxe0 and rxe1 ready"
  trap - ERR

  # The caller's environment and working directory, then CMD (NUL-separated argv).
  # shellcheck disable=SC1091
  source "$ctl/env"
  cd "$(cat "$ctl/cwd")" 2>/dev/null || { complain "no directory $(cat "$ctl/cwd") in the guest"; cd /; }
  local argv=()
  mapfile -d '' argv < "$ctl/argv"
  local limit
  limit=$(cat "$ctl/timeout")

  # CMD's stdout and stderr are pipes, as under a test runner on the host: were they the serial
  # ports themselves, programs would see a terminal (colours, line buffering). A cat per pipe
  # copies to its port; raw mode so that the port passes bytes as written (no \n -> \r\n).
  stty -F /dev/ttyS1 raw -echo
  stty -F /dev/ttyS2 raw -echo
  mkfifo /run/ohio-vm-stdout /run/ohio-vm-stderr
  cat /run/ohio-vm-stdout > /dev/ttyS1 &
  local out_copier=$!
  cat /run/ohio-vm-stderr > /dev/ttyS2 &
  local err_copier=$!

  # CMD in its own session so that the watchdog (and the cleanup below) can kill everything it
  # started. A marker file, not the exit status, tells the host that the watchdog fired.
  set +e
  setsid "${argv[@]}" < /dev/null > /run/ohio-vm-stdout 2> /run/ohio-vm-stderr &
  local pid=$!
  (
    sleep "$limit"
    : > "$ctl/timed_out"
    kill -TERM -- "-$pid" 2>/dev/null
    sleep 5
    kill -KILL -- "-$pid" 2>/dev/null
  ) &
  local watchdog=$!
  wait "$pid"
  local rc=$?
  kill "$watchdog" 2>/dev/null
  # Whatever CMD left running goes now. Then the copiers see the end of their pipes and exit;
  # closing a serial port waits until the UART has sent everything, so no output is lost to the
  # power-off. Something that left CMD's session may still hold a pipe: give up on it after 10 s.
  kill -KILL -- "-$pid" 2>/dev/null
  (sleep 10; kill "$out_copier" "$err_copier") 2>/dev/null &
  wait "$out_copier" "$err_copier"
  echo "$rc" > "$ctl/rc.tmp" && mv "$ctl/rc.tmp" "$ctl/rc"
  say "command exited with status $rc"
  dmesg > "$ctl/dmesg" 2>/dev/null
  sync
  return 0
}

if [ "${1:-}" = --in-guest ]; then
  in_guest
  exit $?
fi

# ------------------------------------------------------------------------------------------------
# On the host.
# ------------------------------------------------------------------------------------------------
die() { echo "rxe_guest: $*" >&2; exit 125; }

[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

KVER=${OHIO_VM_KVER:-$(ls /lib/modules | sort -V | tail -n 1)}
TIMEOUT=${OHIO_VM_TIMEOUT:-600}
MEM=${OHIO_VM_MEM:-2G}
CPUS=${OHIO_VM_CPUS:-2}
CACHE=${OHIO_VM_CACHE:-/tmp/ohio-rxe-vm-cache}
[ -r "/boot/vmlinuz-$KVER" ] || die "no /boot/vmlinuz-$KVER (install linux-image-amd64)"
[ -d "/lib/modules/$KVER" ] || die "no /lib/modules/$KVER"
command -v qemu-system-x86_64 > /dev/null || die "no qemu-system-x86_64 (install qemu-system-x86)"
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "OHIO_VM_TIMEOUT must be whole seconds, not '$TIMEOUT'"
mkdir -p "$CACHE"

# Cache entries are written under a temporary name and renamed, so that concurrent runs never
# see half a file; two runs that build the same entry at once just both rename.
publish() {  # publish TMPFILE FINAL
  [ -s "$1" ] && mv -f "$1" "$2"
}

# The kernel: Debian ships a bzImage whose payload is xz; unpack the ELF vmlinux inside it once
# per kernel build (the key includes the file's size and time in case a package update keeps the
# version string).
kernel_key=$(stat -c '%s-%Y' "/boot/vmlinuz-$KVER")
KERNEL=$CACHE/vmlinux-$KVER-$kernel_key
if [ ! -s "$KERNEL" ]; then
  tmp=$(mktemp "$CACHE/.vmlinux.XXXXXX")
  if python3 - "/boot/vmlinuz-$KVER" > "$tmp" <<'PY' && publish "$tmp" "$KERNEL"; then
import lzma, sys
data = open(sys.argv[1], "rb").read()
start = data.find(b"\xfd7zXZ\x00")
if start < 0:
    sys.exit("no xz payload")
elf = lzma.LZMADecompressor().decompress(data[start:])
if elf[:4] != b"\x7fELF":
    sys.exit("payload is not an ELF vmlinux")
sys.stdout.buffer.write(elf)
PY
    :
  else
    # Booting the compressed image works too, only a few seconds slower under emulation.
    rm -f "$tmp"
    echo "rxe_guest: could not unpack vmlinux; booting the compressed /boot/vmlinuz-$KVER" >&2
    KERNEL=/boot/vmlinuz-$KVER
  fi
fi

# The initramfs: busybox plus the modules needed to reach the host's root (virtio PCI, 9p,
# overlay). Its /init is below; it depends on this script, so the script's hash is in the key.
initrd_key=$( { cat "$SELF"; echo "$KVER"; stat -c '%s-%Y' /bin/busybox "/lib/modules/$KVER/modules.dep"; } |
  sha256sum | cut -c1-16)
INITRD=$CACHE/initramfs-$KVER-$initrd_key.cpio.gz
if [ ! -s "$INITRD" ]; then
  # busybox-static: the initramfs has no libraries.
  [ -x /bin/busybox ] || die "no /bin/busybox (install busybox-static)"
  root=$(mktemp -d "$CACHE/.initramfs.XXXXXX")
  mkdir -p "$root"/{bin,dev,proc,sys,lower,upper,newroot,ctl,modules}
  cp /bin/busybox "$root/bin/"
  # Dependencies first, each module once, in the order modprobe would load them.
  for m in virtio_pci 9pnet_virtio 9p overlay; do
    modprobe -S "$KVER" --show-depends "$m"
  done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' > "$root/modules/paths"
  while read -r ko; do
    cp "$ko" "$root/modules/"
    basename "$ko" >> "$root/modules/order"
  done < "$root/modules/paths"
  rm "$root/modules/paths"
  cat > "$root/init" <<'INIT'
#!/bin/busybox sh
# PID 1 of the guest: mount the host's root read-only with a tmpfs overlay on top, the per-run
# control directory and the read-write shares, chroot into it and run the guest stage of
# rxe_guest.sh. Whatever happens, power off: QEMU then exits and the host reads the results.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
log() { echo "<5>ohio-vm: $*" > /dev/kmsg; }
fail() { echo "<3>ohio-vm: $*" > /dev/kmsg; }
log "initramfs"
for m in $(cat /modules/order); do insmod "/modules/$m" || fail "insmod $m failed"; done

P9="trans=virtio,version=9p2000.L,msize=512000"
R=/newroot
mount_root() {
  mount -t 9p -o "$P9,rw,cache=none" ohio-ctl /ctl || return 1
  # The root is read-only and nothing else changes it during a run: cache it in the guest.
  mount -t 9p -o "$P9,ro,cache=loose" ohio-root /lower || return 1
  mount -t tmpfs -o size=50% overlay-rw /upper || return 1
  mkdir /upper/data /upper/work
  mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work $R || return 1
  mount -t proc proc $R/proc && mount -t sysfs sysfs $R/sys && mount -t devtmpfs devtmpfs $R/dev &&
    mkdir -p $R/dev/pts $R/dev/shm && mount -t devpts devpts $R/dev/pts &&
    mount -t tmpfs shm $R/dev/shm && mount -t tmpfs run $R/run || return 1
  mkdir -p $R/run/ohio-vm && mount --move /ctl $R/run/ohio-vm || return 1
  # Read-write shares, in the order given (a later one may sit inside an earlier one).
  # cache=mmap: coherent with the host, and shared writable mmap works.
  i=0
  while IFS= read -r dir; do
    mkdir -p "$R$dir" &&
      mount -t 9p -o "$P9,rw,cache=mmap" "ohio-rw$i" "$R$dir" || { fail "cannot mount $dir"; return 1; }
    i=$((i + 1))
  done < $R/run/ohio-vm/rw
}
if mount_root; then
  chroot $R /bin/bash "$(cat $R/run/ohio-vm/script)" --in-guest
else
  fail "could not mount the guest's root"
fi
sync
poweroff -f
INIT
  chmod +x "$root/init"
  tmp=$(mktemp "$CACHE/.initramfs-cpio.XXXXXX")
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$tmp"
  rm -rf "$root"
  publish "$tmp" "$INITRD" || die "could not build $INITRD"
fi

# Per-run control directory, shared read-write with the guest: what to run, and where the guest
# leaves CMD's status.
RUN=$(mktemp -d /tmp/ohio-rxe-vm-run.XXXXXX)
cleanup() { rm -rf "$RUN"; }
trap cleanup EXIT
# Exit (and so clean up) on the signals a test runner sends; QEMU, in our process group, gets
# them as well.
trap 'exit 143' TERM
trap 'exit 130' INT
printf '%s\0' "$@" > "$RUN/argv"
pwd > "$RUN/cwd"
echo "$TIMEOUT" > "$RUN/timeout"
echo "$SELF" > "$RUN/script"
# The caller's exported variables, minus those that describe this shell rather than the caller.
for name in $(compgen -e); do
  case $name in PWD | OLDPWD | SHLVL | _ | SHELLOPTS | BASHOPTS) continue ;; esac
  printf 'export %s=%q\n' "$name" "${!name}"
done > "$RUN/env"

virtfs=(-virtfs "local,path=/,mount_tag=ohio-root,security_model=none,readonly=on,multidevs=remap"
  -virtfs "local,path=$RUN,mount_tag=ohio-ctl,security_model=none")
: > "$RUN/rw"
if [ -n "${OHIO_VM_RW:-}" ]; then
  i=0
  IFS=: read -r -a rw_dirs <<< "$OHIO_VM_RW"
  for dir in "${rw_dirs[@]}"; do
    [ -n "$dir" ] || continue
    [ -d "$dir" ] || die "OHIO_VM_RW: no directory $dir"
    dir=$(readlink -f "$dir")
    echo "$dir" >> "$RUN/rw"
    virtfs+=(-virtfs "local,path=$dir,mount_tag=ohio-rw$i,security_model=none")
    i=$((i + 1))
  done
fi

case ${OHIO_VM_ACCEL:-tcg} in
  tcg) accel=(-accel "tcg,thread=multi,tb-size=${OHIO_VM_TB_MB:-256}" -cpu max) ;;
  kvm) accel=(-accel kvm -cpu host) ;;
  *) die "OHIO_VM_ACCEL must be tcg or kvm" ;;
esac

# Serial ports: ttyS0 the console (to a file, shown on failure), ttyS1 CMD's stdout, ttyS2 its
# stderr. The latter two go through pipes to cat rather than QEMU opening our fds' files
# itself: a reopened file would have its own offset (or be truncated) and overwrite what the
# caller already wrote there.
exec {out_fd}> >(cat)
out_pid=$!
exec {err_fd}> >(cat >&2)
err_pid=$!

started_ms=$(($(date +%s%N) / 1000000))
# --foreground keeps QEMU in our process group, so whoever kills our group (Bazel at its test
# timeout) kills QEMU too. The margin covers boot and power-off.
set +e
timeout --foreground -k 10 $((TIMEOUT + 120)) qemu-system-x86_64 \
  -M q35 "${accel[@]}" -smp "$CPUS" -m "$MEM" \
  -nodefaults -no-user-config -display none -no-reboot \
  -kernel "$KERNEL" -initrd "$INITRD" \
  -append "console=ttyS0 loglevel=4 panic=-1" \
  -serial "file:$RUN/console.log" \
  -chardev "file,id=cmd-out,path=/proc/self/fd/$out_fd" -serial chardev:cmd-out \
  -chardev "file,id=cmd-err,path=/proc/self/fd/$err_fd" -serial chardev:cmd-err \
  "${virtfs[@]}" < /dev/null
qemu_rc=$?
set -e
exec {out_fd}>&- {err_fd}>&-
wait "$out_pid" "$err_pid" 2> /dev/null || true
ended_ms=$(($(date +%s%N) / 1000000))

if [ "${OHIO_VM_DEBUG:-0}" = 1 ]; then
  {
    echo "---- rxe_guest: console ----"
    cat "$RUN/console.log" 2> /dev/null
    echo "---- rxe_guest: guest dmesg ----"
    cat "$RUN/dmesg" 2> /dev/null
    echo "---- rxe_guest: devices ready $(cat "$RUN/ready_at" 2> /dev/null || echo '?') s after" \
      "guest start; $(((ended_ms - started_ms) / 1000)).$(printf %03d $(((ended_ms - started_ms) % 1000))) s in all ----"
  } >&2
fi

console_tail() {
  echo "rxe_guest: last lines of the guest console:" >&2
  tail -n 30 "$RUN/console.log" >&2 2> /dev/null || true
}
if [ -e "$RUN/timed_out" ]; then
  echo "rxe_guest: command timed out after ${TIMEOUT}s in the guest (OHIO_VM_TIMEOUT)" >&2
  [ -s "$RUN/rc" ] || console_tail  # and then the guest did not even stop
  exit 124
fi
if [ -s "$RUN/rc" ]; then
  exit "$(cat "$RUN/rc")"
fi
if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
  echo "rxe_guest: the guest did not stop within $((TIMEOUT + 120))s; killed" >&2
  console_tail
  exit 124
fi
echo "rxe_guest: the guest stopped without running the command (qemu exit status $qemu_rc)" >&2
console_tail
exit 125
