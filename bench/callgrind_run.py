"""One Python program run under valgrind's callgrind, counting only the part it marks.

The program starts with counting off, writes its pid to `<control>/ready` once it has done what
is not to be counted, and waits for `<control>/go`; counting is switched on for that process
alone, and its total since then is returned (bench.instructions, bench.rest_instructions).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path


def counted_run(program: list[str], control: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float = 1800, keep: Path | None = None) -> int:
    """Instructions callgrind counted in `program` from its `ready` to its end. `keep`: where to
    copy callgrind's profile (for callgrind_annotate)."""
    out = control / "out"
    process = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                                *program], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    while not (control / "ready").exists():
        if process.poll() is not None:
            raise RuntimeError(f"the run under valgrind ended early: {process.stderr.read()[-3000:] if process.stderr else ''}")
        time.sleep(0.5)
    # vgdb to this process alone: callgrind_control given no pid (a ready file read before its pid
    # was written) sends the command to every callgrind run on the machine, other benchmarks' too.
    # Zeroed first: another run's broadcast may have switched this one's counting on early.
    pid = (control / "ready").read_text()
    for command in (["zero"], ["instrumentation", "on"]):
        subprocess.run(["vgdb", f"--pid={pid}", *command], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)  # fmt: skip
    (control / "go").touch()
    _, errors = process.communicate(timeout=timeout)
    # "summary:", the cost since the zero ("totals:" and valgrind's "Collected" keep what came before).
    totals = [int(found) for found in re.findall(r"^summary: (\d+)", out.read_text(), re.M)] if out.exists() else []
    if keep is not None and out.exists():
        shutil.copy(out, keep)
    if process.returncode != 0 or not totals:
        raise RuntimeError(f"callgrind counted nothing: {errors[-3000:]}")
    return sum(totals)
