# shellcheck shell=bash
# Building what a deploy script runs, shared by deploy/mpi-compare.sh and
# deploy/measure-selection.sh. Source it (bash) from the source tree's top.

# bazel_build_retrying PROG TARGET...: builds the targets; others may be editing the tree, so a
# failed build is retried a few times, 30 s apart, before PROG gives up (exit 1). Then sets
# BAZEL_BIN: the output directory itself, not the bazel-bin symlink, which a concurrent build
# with another configuration repoints.
bazel_build_retrying() {
  local prog=$1 attempt
  shift
  for attempt in 1 2 3 4; do
    if bazel build --curses=no "$@"; then break; fi
    if [ $attempt = 4 ]; then echo "$prog: the build failed 4 times" >&2; exit 1; fi
    echo "$prog: build failed; retrying in 30 s ($attempt/3)" >&2
    sleep 30
  done
  # shellcheck disable=SC2034  # for the script that sourced this
  BAZEL_BIN=$(bazel info --curses=no bazel-bin 2>/dev/null)
}
