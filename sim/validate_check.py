#!/usr/bin/python3
"""Measured ratios against simulated ones (the pure part of sim/validate.sh).

usage: validate_check.py --simulated CSV --measured SHAPE=CSV [--measured ...] [--out CSV] [--strict]

--measured SHAPE=CSV: the medians CSV deploy/local-cluster.sh or deploy/mpi-compare.sh wrote for
  that shape (KxP, e.g. 4x2), header method,bytes,runs,latency_us_median,baseline,... Which
  script wrote it is told by its methods: v1/v2/v3 against flat (local-cluster), or X+ohio and
  ompi+component against the library X alone (mpi-compare).
--simulated CSV: header shape,source,bytes,time_us; the sources are ohio-sim's designs (ohio_v1,
  ohio_v2, ohio_v3) and SMPI's algorithms (smpi_pair, smpi_ompi, smpi_mpich).

Each measured pair (method against its baseline, at a size) is set beside its simulated pair:
  v1, v2, v3 / flat          ohio_v1, ohio_v2, ohio_v3 / smpi_pair (flat is a pairwise exchange)
  ompi+ohio, ompi+component / ompi    ohio_v3 / smpi_ompi
  mpich+ohio / mpich                  ohio_v3 / smpi_mpich
Other methods (one forced inter-node algorithm each) are not simulated here and are listed as such.

The check: where the measured ratio is outside 0.85-1.15 (one side clearly won), the simulated
ratio must be on the same side of 1; elsewhere (a near tie) it must be within +-35% of the
measured one. Prints one row per pair, then the counts. Exit status: 0; 1 with --strict when a
check failed; 2 with a message naming the file and line on bad input.
"""
import argparse
import csv
import re
import sys

TIE_LOW, TIE_HIGH = 0.85, 1.15
NEAR_TIE_TOLERANCE = 0.35
LOCAL_CLUSTER_PAIRS = {"v1": "ohio_v1", "v2": "ohio_v2", "v3": "ohio_v3"}
LIBRARY_SOURCES = {"ompi": "smpi_ompi", "mpich": "smpi_mpich"}
HEADER = ["shape", "method", "baseline", "bytes", "measured_ratio", "simulated_ratio", "rule", "check"]


class InputError(Exception):
    pass


def parse_shape(text):
    if not re.fullmatch(r"[1-9][0-9]*x[1-9][0-9]*", text):
        raise InputError("'%s' is not a shape KxP (e.g. 4x2)" % text)
    return text


def positive_number(text, where):
    try:
        value = float(text)
    except ValueError:
        raise InputError("%s: '%s' is not a number" % (where, text)) from None
    if not value > 0:
        raise InputError("%s: %s is not positive" % (where, text))
    return value


def read_rows(path, required):
    """The CSV's rows as dicts with their line numbers; InputError if a column is missing."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError("%s:1: no column %s (header: %s)" % (path, ", ".join(missing),
                                                                    ",".join(reader.fieldnames or [])))
            return [(reader.line_num, row) for row in reader]
    except OSError as e:
        raise InputError("%s: %s" % (path, e.strerror)) from None


def read_simulated(path):
    """{(shape, source, bytes): time_us}."""
    times = {}
    for line, row in read_rows(path, ["shape", "source", "bytes", "time_us"]):
        where = "%s:%d" % (path, line)
        key = (row["shape"], row["source"], int(positive_number(row["bytes"], where)))
        times[key] = positive_number(row["time_us"], where)
    return times


def read_measured(path):
    """{(method, bytes): median latency}, and each method's baseline."""
    latency, baseline = {}, {}
    for line, row in read_rows(path, ["method", "bytes", "latency_us_median", "baseline"]):
        where = "%s:%d" % (path, line)
        size = int(positive_number(row["bytes"], where))
        if row["latency_us_median"] != "-":
            latency[(row["method"], size)] = positive_number(row["latency_us_median"], where)
        if row["baseline"] != "-":
            baseline[row["method"]] = row["baseline"]
    return latency, baseline


def simulated_pair(method, base):
    """(ohio source, MPI source) the measured pair is predicted by, or None if not simulated."""
    if base == "flat" and method in LOCAL_CLUSTER_PAIRS:
        return LOCAL_CLUSTER_PAIRS[method], "smpi_pair"
    if base in LIBRARY_SOURCES and method in (base + "+ohio", base + "+component"):
        return "ohio_v3", LIBRARY_SOURCES[base]
    return None


def check(measured, simulated):
    """(rule, passed) for one pair of ratios."""
    if measured < TIE_LOW or measured > TIE_HIGH:
        return "same side of 1", (measured < 1) == (simulated < 1)
    return "within 35%", abs(simulated - measured) <= NEAR_TIE_TOLERANCE * measured


def compare(measured_by_shape, simulated):
    """Rows of HEADER's columns, per shape, method and size (check: pass, FAIL or a reason)."""
    rows = []
    for shape, (latency, baseline) in measured_by_shape:
        for (method, size) in sorted(latency, key=lambda k: (k[1], k[0])):
            base = baseline.get(method)
            if base is None or (base, size) not in latency:
                continue
            measured = latency[(method, size)] / latency[(base, size)]
            row = [shape, method, base, str(size), "%.3f" % measured]
            sources = simulated_pair(method, base)
            if sources is None:
                rows.append(row + ["-", "-", "not simulated"])
                continue
            ohio, mpi = (simulated.get((shape, s, size)) for s in sources)
            if ohio is None or mpi is None:
                rows.append(row + ["-", "-", "no simulation of %s at %d" % (shape, size)])
                continue
            rule, passed = check(measured, ohio / mpi)
            rows.append(row + ["%.3f" % (ohio / mpi), rule, "pass" if passed else "FAIL"])
    return rows


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--simulated", required=True)
    p.add_argument("--measured", action="append", default=[], metavar="SHAPE=CSV")
    p.add_argument("--out")
    p.add_argument("--strict", action="store_true")
    args = p.parse_args(argv)
    try:
        measured = []
        for item in args.measured:
            shape, sep, path = item.partition("=")
            if not sep or not path:
                raise InputError("--measured '%s' is not SHAPE=CSV" % item)
            measured.append((parse_shape(shape), read_measured(path)))
        rows = compare(measured, read_simulated(args.simulated))
    except InputError as e:
        print("validate_check.py: %s" % e, file=sys.stderr)
        return 2
    widths = [max(len(HEADER[i]), *(len(r[i]) for r in rows)) if rows else len(HEADER[i])
              for i in range(len(HEADER))]
    for r in [HEADER] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    if args.out:
        with open(args.out, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows([HEADER] + rows)
    failed = sum(r[7] == "FAIL" for r in rows)
    passed = sum(r[7] == "pass" for r in rows)
    print("checks: %d passed, %d failed, %d not checked" % (passed, failed, len(rows) - passed - failed))
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
