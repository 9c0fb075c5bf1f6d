#!/usr/bin/env python3
"""Counts test cases in the test.xml files Bazel wrote for the given targets.

usage: count_results.py TESTLOGS_DIR LABEL...
Prints one line per target that failed and, last, "N passed, N failed". A target without a
test.xml (it did not build, or never ran) counts as one failed test; a sharded target's shards
are summed. Exit status 1 if any failed.
"""
import glob
import os
import sys
import xml.etree.ElementTree as ET


def count(xml_path):
    passed = failed = skipped = 0
    root = ET.parse(xml_path).getroot()
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("status") == "notrun":
            skipped += 1
        else:
            passed += 1
    if passed + failed + skipped == 0:
        # Bazel writes a bare test.xml when a test dies before reporting (crash, timeout).
        failed = 1 if root.find(".//failure") is not None or root.find(".//error") is not None else 0
    return passed, failed, skipped


def main():
    testlogs, labels = sys.argv[1], sys.argv[2:]
    totals = [0, 0, 0]
    for label in labels:
        rel = label.lstrip("/").replace(":", "/")
        path = os.path.join(testlogs, rel, "test.xml")
        # A sharded (or repeated) test writes one test.xml per shard (run) instead.
        paths = [path] if os.path.exists(path) else sorted(glob.glob(os.path.join(testlogs, rel, "*_of_*", "test.xml")))
        if not paths:
            print(f"{label}: no test.xml (did not build or run)")
            totals[1] += 1
            continue
        p = f = s = 0
        for one in paths:
            dp, df, ds = count(one)
            p, f, s = p + dp, f + df, s + ds
        if f:
            print(f"{label}: {f} failed")
        for i, v in enumerate((p, f, s)):
            totals[i] += v
    line = f"{totals[0]} passed, {totals[1]} failed"
    if totals[2]:
        line += f", {totals[2]} skipped"
    print(line)
    return 1 if totals[1] else 0


if __name__ == "__main__":
    sys.exit(main())
