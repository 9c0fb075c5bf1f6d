#!/usr/bin/python3
"""An SMPI per-message overheads file as smpirun settings (sim/validate.sh --smpi-overheads).

usage: smpi_overheads.py FILE

SMPI, as sim/smpi-alltoall.sh runs it, charges a message only the platform's latency and
bandwidth; its settings smpi/os (MPI_Send), smpi/ois (MPI_Isend) and smpi/or (MPI_Recv) add a
host overhead per message, which the sending or receiving rank spends before it goes on. The file
gives them, one `key value` a line, `#` starting a comment:

  smpi/os  0:6.8e-6:0
  smpi/ois 0:6.8e-6:0
  smpi/or  0:6.8e-6:0

The value is SimGrid's piecewise form, sections `SIZE:SECONDS:SECONDS_PER_BYTE` separated by `;`:
a message of more than SIZE bytes (and at most the next section's SIZE) costs SECONDS +
SECONDS_PER_BYTE x its size. Each key at most once. Prints one `key:value` a line, as
sim/smpi-alltoall.sh --cfg takes it. Exit status 2 with the file and line on anything else.
"""
import re
import sys

KEYS = ("smpi/os", "smpi/ois", "smpi/or")
NUMBER = r"[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?"
SECTION = r"[0-9]+:%s:%s" % (NUMBER, NUMBER)
PIECEWISE = re.compile(r"%s(;%s)*" % (SECTION, SECTION))


class InputError(Exception):
    pass


def parse(path):
    """The file's settings as (key, value) in file order; InputError naming file and line."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError("%s: cannot be read (%s)" % (path, e.strerror)) from None
    settings = []
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = "%s:%d" % (path, number)
        if len(words) != 2:
            raise InputError("%s: expected 'key value', got %d words" % (where, len(words)))
        key, value = words
        if key not in KEYS:
            raise InputError("%s: '%s' is not one of %s" % (where, key, ", ".join(KEYS)))
        if any(key == seen for seen, _ in settings):
            raise InputError("%s: %s given twice" % (where, key))
        if not PIECEWISE.fullmatch(value):
            raise InputError("%s: %s '%s' is not SIZE:SECONDS:SECONDS_PER_BYTE[;...]" % (where, key, value))
        settings.append((key, value))
    if not settings:
        raise InputError("%s: no setting (expected %s)" % (path, ", ".join(KEYS)))
    return settings


def main(argv):
    if len(argv) != 2:
        print("usage: smpi_overheads.py FILE", file=sys.stderr)
        return 2
    try:
        settings = parse(argv[1])
    except InputError as e:
        print("smpi_overheads.py: %s" % e, file=sys.stderr)
        return 2
    for key, value in settings:
        print("%s:%s" % (key, value))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
