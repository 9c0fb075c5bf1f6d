#!/bin/bash
# Runs every test twice: a normal build, then an AddressSanitizer build (daemon, library and
# tools included; targets tagged no-asan, which run uninstrumented programs or, like the soak,
# are worth their minutes once, only in the first).
# Then the Debian 13 group (//tests/trixie:trixie, tagged trixie): Debian 13's Open MPI 5.0 and
# MPICH 4.2 in a Debian 13 root that tests/trixie/make-root.sh builds (cached between runs in
# /var/cache/ohio-test; OHIO_TRIXIE=0 leaves the group out). Its packages test builds ohiod and
# the tools inside that root and packages them, both cached by what they are made of: about 30
# minutes the first time on a 2-core machine, about 1 with nothing changed, a few after a change
# (deploy/build-debs.sh's header). The root, its build layer and that build are started first
# thing, in the background at idle priority (deploy/build-debs.sh --prepare,
# tests/at_idle_priority.sh), so that they use what CPU the two runs above leave; the group waits
# for them, then runs make-root.sh itself as before (at once when the root is there).
# Then fuzzes each libFuzzer target briefly (tests/fuzz/fuzz.sh: clang, an output base of its
# own; OHIO_FUZZ_SECONDS per target, default 20, two at once; 0 leaves it out).
# Prints last "N passed, N failed" over all runs; exits non-zero on failure.
set -uo pipefail
cd "$(dirname "$0")/.."

# The Debian 13 group is run on its own, below, once its root is there.
targets=$(bazel query 'tests(//...) except attr(tags, "trixie", tests(//...))' 2>/dev/null | sort)
if [ -z "$targets" ]; then
  echo "no test targets found (bazel query failed?)"
  echo "0 passed, 1 failed"
  exit 1
fi

summary=()
status=0

# What the Debian 13 group needs besides Bazel's outputs (its root, the root's build layer, ohiod
# and the tools built in it: minutes of downloads, dpkg and compiling on a fresh machine) is made
# from the start, beside the groups before it, at idle priority: it takes only the CPU they leave,
# and is ready, or nearly, when the group runs. What it made is kept as when the group makes it;
# the group then finds it made, and makes it again (reporting any failure) if it is not.
trixie_prepare=
if [ "${OHIO_TRIXIE:-1}" != 0 ]; then
  trixie_prepare_log=$(mktemp /tmp/ohio-trixie-prepare.XXXXXX)
  setsid bash tests/at_idle_priority.sh bash deploy/build-debs.sh --release trixie --prepare \
    > "$trixie_prepare_log" 2>&1 < /dev/null &
  trixie_prepare=$!
  trixie_prepare_started=$SECONDS
  # Interrupted, this script takes it along (its own session: its process group).
  trap '[ -z "$trixie_prepare" ] || kill -- "-$trixie_prepare" 2>/dev/null' EXIT
fi
run() {  # run NAME TARGETS [bazel flags...]
  local name=$1 targets=$2; shift 2
  echo "=== $name: bazel test $*"
  bazel test --curses=no --color=no "$@" -- $targets
  local testlogs
  testlogs=$(bazel info "$@" bazel-testlogs 2>/dev/null)
  local counted
  counted=$(python3 tests/count_results.py "$testlogs" $targets) || status=1
  echo "$counted"
  summary+=("$(echo "$counted" | tail -1)")
}

# Targets tagged no-asan load uninstrumented programs (mpirun jobs) and cannot run under ASan,
# or (the soak, the 32-daemon emulated_scale_32x1_test) take too long instrumented and run once.
asan_targets=$(bazel query 'tests(//...) except attr(tags, "no-asan", tests(//...))' 2>/dev/null | sort)
run default "$targets"
run asan "$asan_targets" --config=asan

if [ "${OHIO_TRIXIE:-1}" != 0 ]; then
  echo "=== trixie: tests/trixie/make-root.sh, then bazel test //tests/trixie:trixie"
  waited=$SECONDS
  wait "$trixie_prepare"
  prepared=$?
  echo "the Debian 13 root, its build layer and the build in it, made in the background:" \
    "exit status $prepared after $((SECONDS - trixie_prepare_started)) s, $((SECONDS - waited)) s of it waited for here"
  trixie_prepare=
  # Its output, whole when it failed: make-root.sh's part is what this group printed before.
  if [ "$prepared" = 0 ]; then grep -E '^(make-root|make-build-root|build-in-root)\.sh: ' "$trixie_prepare_log"
  else cat "$trixie_prepare_log"; fi
  rm -f "$trixie_prepare_log"
  if bash tests/trixie/make-root.sh; then
    run trixie "$(bazel query 'attr(tags, "trixie", tests(//tests/trixie:all))' 2>/dev/null | sort)"
  else
    echo "tests/trixie/make-root.sh failed: the Debian 13 group did not run"
    summary+=("0 passed, 1 failed")
  fi
fi

fuzz_seconds=${OHIO_FUZZ_SECONDS:-20}
if [ "$fuzz_seconds" != 0 ]; then
  fuzz_log=$(mktemp)
  bash tests/fuzz/fuzz.sh --seconds "$fuzz_seconds" 2>&1 | tee "$fuzz_log"
  fuzzed=$(tail -1 "$fuzz_log")
  rm -f "$fuzz_log"
  # Whatever stopped the script before its count, it failed.
  [[ "$fuzzed" =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]] || fuzzed="0 passed, 1 failed"
  summary+=("$fuzzed")
fi

passed=0; failed=0
for line in "${summary[@]}"; do
  p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}
  passed=$((passed + p)); failed=$((failed + f))
done
[ "$failed" = 0 ] || status=1
# A line of its own, whatever Bazel left unterminated above.
echo
echo "${passed} passed, ${failed} failed"
exit $status
