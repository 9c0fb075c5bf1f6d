#!/usr/bin/python3
"""Measured latencies -> an ohio selection table (the pure part of deploy/measure-selection.sh).

usage: selection_table.py --nodes N --ppn P --transport tcp|verbs [--win-ratio R (0.95)]
                          [--comment TEXT]... [CSV (stdin)]

CSV, with this header line: function,bytes,variant,run,latency_us
  function   alltoall | alltoallv | alltoallw | ialltoall | ialltoallv
  bytes      bytes per rank pair (a positive integer)
  variant    ohio (the call served through ohio) | mpi (the MPI library alone)
  run        which run the row comes from (any text; medians are over rows, not runs)
  latency_us one call's latency in that run, microseconds (a non-negative decimal)

Prints the table: the fixed preamble, the --comment lines, per function and size the medians
and ratio (as comments), then per function the maximal runs of consecutive measured sizes
where median(ohio) <= R x median(mpi) (each size at most twice the one before) as rows `function N P transport LO-HI ohio`, then a row
sending the measured shape's other sizes to the library, and last the fallback rows, which can
only match shapes not measured. Ratios are computed exactly (fractions of the decimal strings),
so a ratio equal to R is a win whatever floating point would round it to.
Exit status 2 with a message naming the line on bad input.
"""
import argparse
import csv
import sys
from fractions import Fraction

FUNCTIONS = ("alltoall", "alltoallv", "alltoallw", "ialltoall", "ialltoallv")
VARIANTS = ("ohio", "mpi")
TRANSPORTS = ("tcp", "verbs")
PREAMBLE = """\
# ohio selection table: which calls ohio serves and which it hands to the MPI library.
# One row a line; '#' starts a comment; the first row that matches a call wins; a call no row
# matches goes to the MPI library."""
COLUMNS = "# function   nodes  ppn  transport  bytes        path"
# What ohio won at every shape docs/PERFORMANCE.md measured (one node x 4; 4 x 2, 12 x 2, 16 x 2
# and 32 x 1 nodes): MPI_Alltoall of 512 B-4 KiB per rank pair (the ratios are there).
# Written after the row that gives the measured shape's other sizes to the library, so it
# reaches only shapes this measurement says nothing about.
FALLBACK_ROWS = (("alltoall", "any", "any", "any", "512-4KiB", "ohio"),)


class BadInput(Exception):
    pass


def size_text(n):
    """n bytes in the largest binary unit that divides it exactly (no suffix: bytes)."""
    for suffix, unit in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n % unit == 0:
            return "%d%s" % (n // unit, suffix)
    return str(n)


def range_text(lo, hi):
    return size_text(lo) if lo == hi else "%s-%s" % (size_text(lo), size_text(hi))


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def decimal(text, what, line):
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise BadInput("line %d: %s '%s' is not a number" % (line, what, text))
    return value


def read_latencies(stream):
    """{function: {bytes: {variant: [latency, ...]}}}, functions in the order first seen."""
    reader = csv.reader(stream)
    header = next(reader, None)
    if header != ["function", "bytes", "variant", "run", "latency_us"]:
        raise BadInput("line 1: the header must be function,bytes,variant,run,latency_us, not %s" %
                       (",".join(header) if header else "nothing"))
    data = {}
    for row in reader:
        line = reader.line_num
        if not row:
            continue
        if len(row) != 5:
            raise BadInput("line %d: 5 fields expected, got %d" % (line, len(row)))
        function, size, variant, _run, latency = (f.strip() for f in row)
        if function not in FUNCTIONS:
            raise BadInput("line %d: function '%s' is none of %s" % (line, function, ", ".join(FUNCTIONS)))
        if not size.isdigit() or int(size) < 1:
            raise BadInput("line %d: bytes '%s' is not a positive integer" % (line, size))
        if variant not in VARIANTS:
            raise BadInput("line %d: variant '%s' is neither ohio nor mpi" % (line, variant))
        value = decimal(latency, "latency_us", line)
        if value < 0:
            raise BadInput("line %d: latency_us %s is negative" % (line, latency))
        data.setdefault(function, {}).setdefault(int(size), {}).setdefault(variant, []).append(value)
    return data


def decide(data, win_ratio):
    """Per function, per size in order: (bytes, runs_ohio, runs_mpi, median ohio, median mpi,
    ratio or None, ohio wins). A size one variant lacks has no ratio and is not ohio's."""
    decisions = {}
    for function, sizes in data.items():
        rows = []
        for size in sorted(sizes):
            ohio, mpi = sizes[size].get("ohio", []), sizes[size].get("mpi", [])
            m_ohio = median(ohio) if ohio else None
            m_mpi = median(mpi) if mpi else None
            ratio = None
            if m_ohio is not None and m_mpi is not None and m_mpi > 0:
                ratio = m_ohio / m_mpi
            rows.append((size, len(ohio), len(mpi), m_ohio, m_mpi, ratio, ratio is not None and ratio <= win_ratio))
        decisions[function] = rows
    return decisions


def win_ranges(rows):
    """Maximal runs of measured sizes that ohio wins, each size at most twice the one before
    (the sweep's step), so that a range never spans sizes nobody measured: [(lo, hi), ...]."""
    ranges, start, last = [], None, None
    for size, _, _, _, _, _, wins in rows:
        if start is not None and (not wins or size > 2 * last):
            ranges.append((start, last))
            start = None
        if wins:
            start = size if start is None else start
            last = size
    if start is not None:
        ranges.append((start, last))
    return ranges


def row_text(function, nodes, ppn, transport, size, path):
    return "%-12s %-6s %-4s %-10s %-12s %s" % (function, nodes, ppn, transport, size, path)


def fmt(value, places=2):
    return "-" if value is None else "%.*f" % (places, float(value))


def table(data, nodes, ppn, transport, win_ratio, comments):
    decisions = decide(data, win_ratio)
    out = [PREAMBLE, "#"]
    out += ["# " + c if c else "#" for c in comments]
    out.append("# Per function and bytes per rank pair: runs (ohio/mpi), median latency in us with ohio and")
    out.append("# with the MPI library alone, ratio = ohio / mpi; ohio's where ratio <= %s." % fmt(win_ratio))
    for function, rows in decisions.items():
        for size, n_ohio, n_mpi, m_ohio, m_mpi, ratio, wins in rows:
            out.append("#   %-11s %9d  runs %d/%d  ohio %10s  mpi %10s  ratio %6s  %s" %
                       (function, size, n_ohio, n_mpi, fmt(m_ohio), fmt(m_mpi), fmt(ratio, 3),
                        "ohio" if wins else ("mpi" if ratio is not None else "mpi (not measured both ways)")))
    out.append("#")
    out.append(COLUMNS)
    for function, rows in decisions.items():
        for lo, hi in win_ranges(rows):
            out.append(row_text(function, nodes, ppn, transport, range_text(lo, hi), "ohio"))
    # The measured shape's other sizes, measured or not, are the library's: no fallback row below
    # may give them to ohio.
    measured = list(decisions)
    for function in measured:
        out.append(row_text(function, nodes, ppn, transport, "any", "mpi"))
    if FALLBACK_ROWS:
        out.append("# Fallback for shapes not measured here (the rows above settle %d node%s x %d, %s):" %
                   (nodes, "" if nodes == 1 else "s", ppn, transport))
        for row in FALLBACK_ROWS:
            out.append(row_text(*row))
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(prog="selection_table.py",
                                     description="Measured latencies (CSV) -> an ohio selection table.")
    parser.add_argument("--nodes", type=int, required=True, help="nodes of the measured communicator")
    parser.add_argument("--ppn", type=int, required=True, help="ranks per node measured")
    parser.add_argument("--transport", choices=TRANSPORTS, required=True, help="the daemons' transport")
    parser.add_argument("--win-ratio", default="0.95", help="ohio's where median ohio / median mpi <= this")
    parser.add_argument("--comment", action="append", default=[], help="a comment line for the header")
    parser.add_argument("csv", nargs="?", help="the latencies (default: stdin)")
    args = parser.parse_args(argv)
    try:
        if args.nodes < 1 or args.ppn < 1:
            raise BadInput("--nodes and --ppn must be at least 1")
        try:
            win_ratio = Fraction(args.win_ratio)
        except (ValueError, ZeroDivisionError):
            raise BadInput("--win-ratio '%s' is not a number" % args.win_ratio)
        if win_ratio <= 0:
            raise BadInput("--win-ratio must be above 0")
        if args.csv:
            with open(args.csv, newline="") as f:
                data = read_latencies(f)
        else:
            data = read_latencies(sys.stdin)
        if not data:
            raise BadInput("no measurements in the CSV")
    except (BadInput, OSError) as e:
        print("selection_table.py: %s" % e, file=sys.stderr)
        return 2
    sys.stdout.write(table(data, args.nodes, args.ppn, args.transport, win_ratio, args.comment))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
