"""Where two callgrind profiles of the same work differ, function by function.

Reads the per-thread files of two runs (`--separate-threads=yes`) with `callgrind_annotate`,
sums each function's own instructions (exclusive: they add up, where inclusive counts repeat
through recursion, as the interpreter's frames do) over the chosen threads of each run, divides
by the units of work the run counted, and lists the functions whose cost per unit moved most.
A Python function is not seen by name (the interpreter's C functions are): what the list tells
apart is C work, the kind of work (JSON, pydantic-core, structs, locks, system calls), and how
much more interpreting was done.

    python -m bench.callgrind_functions OFF_PREFIX ON_PREFIX UNITS [TOP]
      (OFF_PREFIX.1-* and ON_PREFIX.1-* are the per-thread files, e.g. callgrind.out)
"""

from __future__ import annotations

import glob
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable

# "  1,234,567 (12.3%)  file:function [object]" (the object only when the file is known)
_LINE = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.+?)\s*$")


def own_instructions(path: str) -> Counter[str]:
    """Each function's own instructions in one callgrind file."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    found: Counter[str] = Counter()
    for line in out.splitlines():
        match = _LINE.match(line)
        if match and "PROGRAM TOTALS" not in line:
            found[_function(match.group(2))] += int(match.group(1).replace(",", ""))
    return found


def _function(where: str) -> str:
    """The function's name with the object it is in, without the build's source path."""
    where = re.sub(r"\s*\[(.+)\]$", lambda m: " [" + m.group(1).rsplit("/", 1)[-1] + "]", where)
    return where.rsplit("/", 1)[-1] if " [" not in where else where.split(":", 1)[-1]


def summed(paths: Iterable[str]) -> Counter[str]:
    total: Counter[str] = Counter()
    for path in paths:
        total.update(own_instructions(path))
    return total


def differences(off: Counter[str], on: Counter[str], units: int, top: int = 30) -> list[tuple[str, float, float]]:
    """(function, instructions per unit off, on minus off per unit), largest moves first."""
    names = set(off) | set(on)
    moved = [(name, off[name] / units, (on[name] - off[name]) / units) for name in names]
    return sorted(moved, key=lambda row: -abs(row[2]))[:top]


def print_differences(rows: list[tuple[str, float, float]], write: Callable[[str], object] = print) -> None:
    write(f"  {'function (own instructions)':<90} {'off/unit':>10} {'on-off':>10}")
    for name, off, moved in rows:
        write(f"  {name[:90]:<90} {off:>10.0f} {moved:>+10.0f}")


if __name__ == "__main__":
    off_prefix, on_prefix, units = sys.argv[1], sys.argv[2], int(sys.argv[3])
    top = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    found = {prefix: summed(glob.glob(f"{prefix}.1-*")) for prefix in (off_prefix, on_prefix)}
    print_differences(differences(found[off_prefix], found[on_prefix], units, top))
