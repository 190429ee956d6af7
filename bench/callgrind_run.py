"""One Python program run under valgrind's callgrind, counting only the part it marks.

The program starts with counting off, writes its pid to `<control>/ready` once it has done what
is not to be counted, and waits for `<control>/go`; counting is switched on for that process
alone, and its total since then is returned (bench.instructions, bench.rest_instructions), or
each thread's.
"""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
import time
from pathlib import Path


def counted_run(program: list[str], control: Path, *, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float = 1800, keep: Path | None = None) -> int:
    """Instructions callgrind counted in `program` from its `ready` to its end. `keep`: where to
    copy callgrind's profile (for callgrind_annotate)."""
    return sum(_counted(program, control, cwd, env, timeout, keep, by_thread=False).values())


def counted_by_thread(program: list[str], control: Path, *, cwd: Path | None = None,
                      env: dict[str, str] | None = None, timeout: float = 1800) -> dict[str, int]:
    """The same, by thread name: the program writes `<control>/threads.json` (its threads' native
    ids -> names) before its `ready`, and those threads live on until its end."""
    return _counted(program, control, cwd, env, timeout, None, by_thread=True)


def _counted(program: list[str], control: Path, cwd: Path | None, env: dict[str, str] | None, timeout: float,
             keep: Path | None, *, by_thread: bool) -> dict[str, int]:
    out = control / "out"
    threads = ["--separate-threads=yes"] if by_thread else []
    # Its stderr to a file, not a pipe: a program that writes more than a pipe holds (its log lines)
    # before its `ready` would block on the write while nothing reads the pipe.
    stderr_path = control / "stderr"
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no", *threads,
                                    f"--callgrind-out-file={out}", *program], cwd=cwd, env=env,
                                   stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    while not (control / "ready").exists():
        if process.poll() is not None:
            raise RuntimeError(f"the run under valgrind ended early: {stderr_path.read_text()[-3000:]}")
        time.sleep(0.5)
    # vgdb to this process alone: callgrind_control given no pid (a ready file read before its pid
    # was written) sends the command to every callgrind run on the machine, other benchmarks' too.
    # Zeroed first: another run's broadcast may have switched this one's counting on early.
    pid = (control / "ready").read_text()
    for command in (["zero"], ["instrumentation", "on"]):
        subprocess.run(["vgdb", f"--pid={pid}", *command], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)  # fmt: skip
    names = _valgrind_thread_names(pid, control) if by_thread else {}
    (control / "go").touch()
    process.wait(timeout=timeout)
    errors = stderr_path.read_text()
    # "summary:", the cost since the zero ("totals:" and valgrind's "Collected" keep what came before).
    files = sorted(glob.glob(f"{out}-*")) if by_thread else [str(out)] if out.exists() else []
    totals: dict[str, int] = {}
    for path in files:
        found = [int(n) for n in re.findall(r"^summary: (\d+)", Path(path).read_text(), re.M)]
        if found:
            name = names.get(int(path.rsplit("-", 1)[1]), "?") if by_thread else "all"
            totals[name] = totals.get(name, 0) + sum(found)
    if keep is not None and out.exists():
        shutil.copy(out, keep)
    if process.returncode != 0 or not totals:
        raise RuntimeError(f"callgrind counted nothing: {errors[-3000:]}")
    return totals


def _valgrind_thread_names(pid: str, control: Path) -> dict[int, str]:
    """valgrind's thread number -> the Python thread's name, numbers left off (a thread pool's worker
    started after the names were written, anyio's replacing an idle one, is "a later thread")."""
    import json

    by_native_id = json.loads((control / "threads.json").read_text())
    scheduler = subprocess.run(["vgdb", f"--pid={pid}", "v.info", "scheduler"], capture_output=True, text=True).stdout
    found = re.findall(r"^Thread (\d+): status = .*\(lwpid (\d+)\)", scheduler, re.MULTILINE)
    return {int(thread): re.sub(r"[-_]?\d+$", "", by_native_id[lwp]) if lwp in by_native_id else "a later thread"
            for thread, lwp in found}
