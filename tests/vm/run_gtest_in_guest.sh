#!/bin/bash
# run_gtest_in_guest.sh RXE_GUEST BINARY [ARGS...]
#
# The test script of every rxe_vm_test (tests/vm/rxe_vm_test.bzl): boots one Soft-RoCE guest with
# RXE_GUEST (tests/vm/rxe_guest.sh) and runs the gtest BINARY in it with ARGS. Both are paths
# relative to the runfiles directory, which is our working directory and is the same path in the
# guest. Bazel's test environment goes along (rxe_guest.sh passes the caller's environment), so
# --test_filter (TESTBRIDGE_TEST_ONLY), --test_arg, TEST_SRCDIR and TEST_TMPDIR work as usual.
#
# What differs from a test run on the host, and why:
# - The guest sees the host's files read-only with a throwaway writable layer on top. TEST_TMPDIR
#   is writable there, but what the test writes into it stays in the guest: it is on the guest's
#   tmpfs, where unix sockets can be bound (on a 9p share they cannot: ENXIO).
# - gtest's XML report therefore goes to a directory shared read-write with the host, and is
#   copied to $XML_OUTPUT_FILE afterwards, so that Bazel (and tests/count_results.py) count the
#   individual test cases. TEST_UNDECLARED_OUTPUTS_DIR is shared read-write as well.
# - The guest gets a command timeout a little below Bazel's, so that a hung test ends with
#   rxe_guest.sh's message (and the guest console on a VM failure) rather than a bare kill.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 RXE_GUEST BINARY [ARGS...]" >&2; exit 2; }
guest=$PWD/$1
binary=$PWD/$2
shift 2

tmp=${TEST_TMPDIR:-$(mktemp -d)}
report_dir=$(mktemp -d "$tmp/gtest-report.XXXXXX")
report=$report_dir/test.xml

rw=$report_dir
if [ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]; then
  mkdir -p "$TEST_UNDECLARED_OUTPUTS_DIR"
  rw=$rw:$TEST_UNDECLARED_OUTPUTS_DIR
fi
export OHIO_VM_RW=${OHIO_VM_RW:+$OHIO_VM_RW:}$rw

# Boot and power-off take ~10 s, more on a loaded machine; leave them a minute of Bazel's time.
if [ -z "${OHIO_VM_TIMEOUT:-}" ] && [ -n "${TEST_TIMEOUT:-}" ]; then
  limit=$((TEST_TIMEOUT - 60))
  [ "$limit" -ge 30 ] || limit=30
  export OHIO_VM_TIMEOUT=$limit
fi

# A sharded test: gtest in the guest honours TEST_SHARD_INDEX/TEST_TOTAL_SHARDS, but the file
# that tells Bazel so must be touched here, where Bazel can see it.
if [ -n "${TEST_TOTAL_SHARDS:-}" ] && [ -n "${TEST_SHARD_STATUS_FILE:-}" ]; then
  touch "$TEST_SHARD_STATUS_FILE"
fi

export GTEST_OUTPUT=xml:$report
started=$(date +%s)
set +e
"$guest" "$binary" "$@"
rc=$?
set -e
echo "run_gtest_in_guest: guest boot and test took $(($(date +%s) - started)) s, exit status $rc"

if [ -s "$report" ] && [ -n "${XML_OUTPUT_FILE:-}" ]; then
  # A non-zero exit with every case passed (a crash at exit, a sanitizer report, a timeout after
  # the report was written) must still count as a failure: add a failed case saying so.
  python3 - "$report" "$XML_OUTPUT_FILE" "$rc" <<'PY'
import sys
import xml.etree.ElementTree as ET

src, dst, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
tree = ET.parse(src)
root = tree.getroot()
failed = any(c.find("failure") is not None or c.find("error") is not None
             for c in root.iter("testcase"))
if rc != 0 and not failed:
    suite = ET.SubElement(root, "testsuite", name="rxe_vm", tests="1", failures="1")
    case = ET.SubElement(suite, "testcase", name="exit_status", classname="rxe_vm")
    ET.SubElement(case, "failure", message=f"the test exited with status {rc}")
tree.write(dst, encoding="UTF-8", xml_declaration=True)
PY
fi
# No report: the guest or the binary died before gtest wrote it; Bazel writes a test.xml with
# one failure from our exit status.
exit "$rc"
