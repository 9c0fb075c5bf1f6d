#!/bin/bash
# deploy/local-cluster.sh (the README's first command) and deploy/install-deps.sh: --help names
# both modes of each, and bad arguments are refused with exit 2 and a message saying what is
# wrong, before anything is installed or built. The scripts run from a copy in which
# install-deps.sh is a stand-in that records being reached, so that a refusal that fails to
# happen shows as a failure here instead of an installation.
set -euo pipefail
R="$TEST_SRCDIR/$TEST_WORKSPACE"
T="$TEST_TMPDIR/tree"
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$T/deploy/lib"
cp "$R/deploy/local-cluster.sh" "$T/deploy/"
cp "$R/deploy/lib/bench-results.sh" "$R/deploy/lib/netns-cluster.sh" "$R/deploy/lib/processes.sh" "$T/deploy/lib/"
reached="$TEST_TMPDIR/install-reached"
printf '#!/bin/bash\ntouch %q\nexit 99\n' "$reached" > "$T/deploy/install-deps.sh"

# refused "ARGS" "MESSAGE": local-cluster.sh with ARGS exits 2, says MESSAGE, installs nothing.
refused() {
  local args=$1 want=$2 out rc=0
  # shellcheck disable=SC2086  # ARGS is a list of words
  out=$(bash "$T/deploy/local-cluster.sh" $args 2>&1) || rc=$?
  [ "$rc" = 2 ] || fail "local-cluster.sh $args: exit $rc, want 2; said: $out"
  grep -qF -- "$want" <<<"$out" || fail "local-cluster.sh $args said '$out', want '$want'"
  [ ! -e "$reached" ] || fail "local-cluster.sh $args went on to install"
}
refused "--sizes 1,4096 --min-bytes 2" "--sizes or --min-bytes/--max-bytes, not both"
refused "--sizes 1,0" "sizes and --iterations need numbers >= 1, not '0'"
refused "--sizes 1,4k" "sizes and --iterations need numbers >= 1, not '4k'"
refused "--iterations -5" "sizes and --iterations need numbers >= 1, not '-5'"
refused "--min-bytes 8192 --max-bytes 4096" "no sizes between --min-bytes and --max-bytes"
refused "--runs 0" "--runs needs a number >= 1"
refused "--nodes 1" "--nodes must be 2..64"
refused "--fast" "unknown argument --fast"

help=$(bash "$T/deploy/local-cluster.sh" --help)
for want in "--full" "--sizes" "8 sizes from 1 B to 1 MiB" "every power of two from 1 B to 1 MiB (21 sizes)" \
            "--daemon-flags"; do
  grep -qF -- "$want" <<<"$help" || fail "local-cluster.sh --help does not say '$want'"
done
# The usage text ends where the script begins: nothing of the code in --help.
! grep -q 'set -euo pipefail' <<<"$help" || fail "local-cluster.sh --help prints code"
grep -q 'overrides it\.$' <<<"$help" || fail "local-cluster.sh --help is cut short"

help=$(bash "$R/deploy/install-deps.sh" --help)
grep -qF -- "--main-job" <<<"$help" || fail "install-deps.sh --help does not name --main-job"
grep -qF -- ".ci/run" <<<"$help" || fail "install-deps.sh --help does not say what needs everything"
rc=0
out=$(bash "$R/deploy/install-deps.sh" --everything 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "install-deps.sh --everything: exit $rc, want 2"
grep -qF "unknown argument '--everything'" <<<"$out" || fail "install-deps.sh --everything said: $out"
rc=0
out=$(bash "$R/deploy/install-deps.sh" --main-job --main-job 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "install-deps.sh with two arguments: exit $rc, want 2"
echo "PASS"
