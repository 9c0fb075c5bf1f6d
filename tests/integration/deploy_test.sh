#!/bin/bash
# deploy/install.sh into a temporary prefix from the built files, then what it installed:
# binaries that run, headers and library a program compiles and links against, the config that
# ohiod accepts, a unit that `systemd-analyze verify` passes (where systemd-analyze exists), the
# Slurm prolog pointing at the installed ohioctl, Open MPI's component under the prefix, and a
# second install that keeps the config.
set -euo pipefail
R="$TEST_SRCDIR/$TEST_WORKSPACE"
P="$TEST_TMPDIR/prefix"
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$R/deploy/install.sh" --prefix "$P" --from "$R"

for f in sbin/ohiod bin/ohioctl lib/libohio.so share/ohio/slurm-prolog.sh; do
  [ -x "$P/$f" ] || fail "$P/$f is not an executable file"
done
for f in include/ohio/ohio.h include/ohio/ohio.hpp lib/pkgconfig/ohio.pc etc/ohio/ohiod.conf \
         lib/systemd/system/ohiod.service share/doc/ohio/OPERATIONS.md share/doc/ohio/SECURITY.md; do
  [ -f "$P/$f" ] || fail "$P/$f is missing"
done
for lib in libohio_mpi_openmpi.so libohio_mpi_mpich.so; do
  [ -x "$P/lib/$lib" ] || fail "$P/lib/$lib is missing"
done
# Outside /usr and /usr/local Open MPI's component goes under the prefix, never into Open MPI's
# own directory; ompi_info, pointed there, finds it.
[ -x "$P/lib/openmpi/mca_coll_ohio.so" ] || fail "$P/lib/openmpi/mca_coll_ohio.so is missing"
if command -v ompi_info > /dev/null; then
  OMPI_MCA_mca_base_component_path="$P/lib/openmpi:$(ompi_info --path pkglibdir | sed -n 's/^ *Pkglibdir: *//p')" \
    ompi_info | grep -q "MCA coll: ohio" || fail "ompi_info does not list the installed coll/ohio"
fi

"$P/sbin/ohiod" --version | grep -q '^ohiod ' || fail "ohiod --version"
"$P/bin/ohioctl" --version | grep -q '^ohioctl ' || fail "ohioctl --version"
# The installed default config is one ohiod accepts (it reads the file before answering --help).
"$P/sbin/ohiod" --config "$P/etc/ohio/ohiod.conf" --help > /dev/null || fail "ohiod rejects the installed config"

unit="$P/lib/systemd/system/ohiod.service"
grep -qx "ExecStart=$P/sbin/ohiod --config $P/etc/ohio/ohiod.conf" "$unit" || fail "ExecStart in $unit: $(grep ExecStart= "$unit")"
grep -qx "Type=notify" "$unit" || fail "Type=notify"
grep -qx "LimitMEMLOCK=infinity" "$unit" || fail "LimitMEMLOCK"
grep -q "^WatchdogSec=" "$unit" || fail "WatchdogSec"
grep -qx "RuntimeDirectory=ohio" "$unit" || fail "RuntimeDirectory"
grep -q "^Restart=" "$unit" || fail "Restart"
if command -v systemd-analyze > /dev/null; then
  # Warnings count as failures too: an unknown key is only a warning to systemd.
  out=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
  echo "systemd-analyze verify $unit: ok"
else
  echo "SKIP: systemd-analyze is not installed; the unit was not verified"
fi

grep -q "OHIOCTL=\${OHIOCTL:-$P/bin/ohioctl}" "$P/share/ohio/slurm-prolog.sh" || fail "prolog's ohioctl path"
bash -n "$P/share/ohio/slurm-prolog.sh" || fail "prolog syntax"

grep -q '#include "ohio.h"' "$P/include/ohio/ohio.hpp" || fail "ohio.hpp still includes client/libohio/ohio.h"
if command -v c++ > /dev/null; then
  cat > "$TEST_TMPDIR/use.cc" <<'PROGRAM'
#include <ohio.hpp>
int main() {
  ohio_client* c = nullptr;
  // No daemon on this socket: the call must fail cleanly, with a message.
  int rc = ohio_connect("/nonexistent/ohiod.sock", &c);
  return rc == OHIO_OK ? 1 : 0;
}
PROGRAM
  # An AddressSanitizer build installs an instrumented library: the program must be one too.
  sanitize=()
  if ldd "$P/lib/libohio.so" | grep -q libasan; then sanitize=(-fsanitize=address); fi
  c++ -std=c++17 "${sanitize[@]}" -I"$P/include/ohio" "$TEST_TMPDIR/use.cc" -L"$P/lib" -Wl,-rpath,"$P/lib" -lohio \
    -o "$TEST_TMPDIR/use" || fail "a program does not build against the installed headers and library"
  "$TEST_TMPDIR/use" || fail "the program linked against the installed libohio misbehaved"
fi

# Installing again keeps the admin's config and puts the default beside it.
echo "timeout-ms = 5000" >> "$P/etc/ohio/ohiod.conf"
bash "$R/deploy/install.sh" --prefix "$P" --from "$R" > "$TEST_TMPDIR/again.out"
grep -qx "timeout-ms = 5000" "$P/etc/ohio/ohiod.conf" || fail "the second install replaced the config"
[ -f "$P/etc/ohio/ohiod.conf.dist" ] || fail "no ohiod.conf.dist beside the kept config"
grep -q "kept $P/etc/ohio/ohiod.conf" "$TEST_TMPDIR/again.out" || fail "the second install did not say it kept the config"

bash "$R/deploy/install.sh" --bogus > /dev/null 2>&1 && fail "an unknown argument was accepted"
echo "PASS"
