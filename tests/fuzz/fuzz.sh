#!/bin/bash
# Builds the libFuzzer targets of tests/fuzz with clang and fuzzes each for a bounded time,
# starting from its checked-in corpus (docs/FUZZING.md).
#
# usage: tests/fuzz/fuzz.sh [--seconds N] [--parallel N] [--keep-corpus DIR] [TARGET...]
#   --seconds N      how long each target runs (default 60)
#   --parallel N     targets run at once (default 2)
#   --keep-corpus D  grow the corpus in D/TARGET and keep it (default: a scratch directory)
#   TARGET           control_frame control_request tcp_frame verbs_wire exchange_message
#                    daemon_config (default: all)
# Prints one line per target with its figures and, last, "N passed, N failed"; a target that
# crashes, breaks an invariant, leaks or times out fails, and its input is printed (base64) and
# kept. Exit status 1 if any failed.
#
# Why an output base of its own: see build:fuzz in .bazelrc. It lives in
# $OHIO_FUZZ_OUTPUT_BASE (default ~/.cache/ohio-fuzz/<hash of this checkout>); its Bazel server
# exits after 5 idle minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."

ALL=(control_frame control_request tcp_frame verbs_wire exchange_message daemon_config)
seconds=60
parallel=2
keep=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --keep-corpus) keep=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${ALL[@]}")
for t in "${targets[@]}"; do
  [[ " ${ALL[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target $t (${ALL[*]})" >&2; exit 2; }
done

output_base=${OHIO_FUZZ_OUTPUT_BASE:-$HOME/.cache/ohio-fuzz/$(pwd -P | md5sum | cut -c1-12)}
fuzz_bazel() { bazel --output_base="$output_base" --max_idle_secs=300 "$@"; }

labels=()
for t in "${targets[@]}"; do labels+=("//tests/fuzz:${t}_fuzzer"); done
echo "=== fuzz: building ${#targets[@]} targets with clang (output base $output_base)"
if ! fuzz_bazel build --config=fuzz --curses=no --color=no "${labels[@]}"; then
  echo "fuzz targets did not build"
  echo "0 passed, ${#targets[@]} failed"
  exit 1
fi
bin=$(fuzz_bazel info --config=fuzz bazel-bin 2>/dev/null)

work=$(mktemp -d /tmp/ohio-fuzz.XXXXXX)
echo "=== fuzz: each target ${seconds}s, ${parallel} at once; logs in $work"

run_one() {  # run_one TARGET: fuzzes it, leaves its exit status in $work/TARGET.rc
  local t=$1 corpus
  corpus=${keep:+$keep/$t}
  corpus=${corpus:-$work/$t.corpus}
  mkdir -p "$corpus"
  local dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a leak or a runaway allocation.
  timeout $((seconds + 120)) "$bin/tests/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" -artifact_prefix="$work/$t-" "$corpus" "tests/fuzz/corpus/$t" \
    >"$work/$t.log" 2>&1
  echo $? >"$work/$t.rc"
}

# ASan records a stack for every allocation; the config loader allocates so much that this
# more than halved its runs. A kept input rerun by hand gets the full stacks again.
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}

running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait

passed=0
failed=0
for t in "${targets[@]}"; do
  log=$work/$t.log
  rc=$(cat "$work/$t.rc" 2>/dev/null || echo 1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  done_line=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$done_line")
  if [ "$rc" = 0 ]; then
    passed=$((passed + 1))
    echo "$t: passed, ${runs:-?} runs in ${seconds}s, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}"
  else
    failed=$((failed + 1))
    echo "$t: FAILED (exit $rc) after ${runs:-?} runs; last lines of $log:"
    tail -40 "$log" | sed 's/^/    /'
    for a in "$work/$t-"*; do
      [ -f "$a" ] || continue
      echo "    input kept in $a; as base64: $(head -c 4096 "$a" | base64 -w0)"
    done
  fi
done
[ "$failed" = 0 ] && [ -z "$keep" ] && rm -rf "$work"
echo
echo "${passed} passed, ${failed} failed"
[ "$failed" = 0 ]
