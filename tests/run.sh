#!/bin/bash
# Runs every test twice: a normal build, then an AddressSanitizer build (daemon, library and
# tools included; targets tagged no-asan, which run uninstrumented programs or, like the soak,
# are worth their minutes once, only in the first).
# Then the Debian 13 group (//tests/trixie:trixie, tagged trixie): Debian 13's Open MPI 5.0 and
# MPICH 4.2 in a Debian 13 root that tests/trixie/make-root.sh builds first (cached between runs
# in /var/cache/ohio-test; OHIO_TRIXIE=0 leaves the group out). Its packages test builds ohiod and
# the tools inside that root and packages them, both cached by what they are made of: about 30
# minutes the first time on a 2-core machine, about 1 with nothing changed, a few after a change
# (deploy/build-debs.sh's header).
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
