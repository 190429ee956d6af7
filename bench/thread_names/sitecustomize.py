"""Names each Python thread in the kernel as in Python (its first 15 characters), so that
/proc/<pid>/task/<tid>/comm tells a process's threads apart (bench/thread_split.py): Python 3.11
leaves every thread the process's name. Loaded by the benchmark's cluster only, through
PYTHONPATH (Python imports `sitecustomize` at its start); baton itself does not do it.

With BATON_BENCH_GC_STATS=<directory>, each process also writes there the garbage collector's
CPU time and runs by generation (<pid>.json): whether a setting makes collections costlier."""

import ctypes
import threading

_PR_SET_NAME = 15
_libc = ctypes.CDLL(None, use_errno=True)
_bootstrap_inner = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]


def _named_bootstrap_inner(self: threading.Thread) -> None:
    _libc.prctl(_PR_SET_NAME, self.name.encode()[:15], 0, 0, 0)
    _bootstrap_inner(self)


threading.Thread._bootstrap_inner = _named_bootstrap_inner  # type: ignore[attr-defined]


def _gc_stats(directory: str) -> None:
    """Diagnostic: the garbage collector's CPU time and runs by generation, written to
    `directory`/<pid>.json after each collection of generation 1 or 2."""
    import gc
    import json
    import os
    import time

    totals = {"ns": [0, 0, 0], "runs": [0, 0, 0], "collected": [0, 0, 0]}
    started = [0]
    path = os.path.join(directory, f"{os.getpid()}.json")

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.thread_time_ns()
            return
        generation = info["generation"]
        totals["ns"][generation] += time.thread_time_ns() - started[0]
        totals["runs"][generation] += 1
        totals["collected"][generation] += info["collected"]
        if generation:
            with open(path, "w") as out:
                json.dump(totals, out)

    gc.callbacks.append(callback)


if __import__("os").environ.get("BATON_BENCH_GC_STATS"):
    _gc_stats(__import__("os").environ["BATON_BENCH_GC_STATS"])
