"""Where the CPU time of bench/tracing.py's runs goes, by kind of thread, off against on: user
and system time and context switches per transition, and what the rest of the machine did
meanwhile. A module's CPU per transition, on against off, mixes tracing's own work with how
fast the cores ran each thread (the other processes on them, the hypervisor): this split shows
which thread and which kind of time a difference is in, and whether threads that run no tracing
code (the broker client's) moved as much, which the machine's load would do and tracing would not. Beside them, how fast the machine ran
in each run: the CPU time of a fixed piece of Python work in a process apart (bench/speed_probe.py),
which moves by tens of percent from run to run with nothing of baton's in it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.procstat import descendants
from bench.thread_split import ZERO, ThreadMeter, ThreadUse, machine_ticks

# Loaded by each module process (PYTHONPATH) so that its threads carry their names in the kernel.
THREAD_NAMES = Path(__file__).resolve().parent / "thread_names"

# A module thread's kind, by the start of its name (the first that matches).
KINDS = (("OtelBatch", "module: span exporter"), ("baton-store", "module: store pool"),
         ("baton-rabbit", "module: broker client"), ("", "module: other threads"))  # fmt: skip
ORDER = ("module: store pool", "module: broker client", "module: span exporter", "module: other threads",
         "command children", "this process (submissions, receiver, speed probe)", "RabbitMQ", "the machine's other load",
         "the machine: stolen by the hypervisor")  # fmt: skip
# How fast the machine ran meanwhile: a fixed piece of work's CPU time (per piece, not per transition).
PROBE = "a fixed piece of Python work in a process apart (bench/speed_probe.py), ms a piece"


def kind(name: str) -> str:
    role, _, thread = name.partition("/")
    if role == "module":
        return next(label for prefix, label in KINDS if thread.startswith(prefix))
    return {"child": "command children", "bench": "this process (submissions, receiver, speed probe)"}.get(role, role)


@contextmanager
def measured(module_pids: Callable[[], list[int]], broker_pid: int | None, transitions: int) -> Iterator[dict]:
    """Fills the dict it yields, on leaving, with kind -> (user ms, system ms, voluntary and
    involuntary switches), per transition, over the block."""
    probe = subprocess.Popen([sys.executable, "-m", "bench.speed_probe"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=Path(__file__).resolve().parents[1])  # fmt: skip
    # The probe's own CPU counts with this process's: it is the benchmark's, not the machine's other load.
    meter = ThreadMeter({"module": module_pids, "child": lambda: descendants(module_pids()),
                         "bench": lambda: [os.getpid(), probe.pid], "RabbitMQ": lambda: [broker_pid] if broker_pid else []})  # fmt: skip
    split: dict[str, tuple[float, float, float, float]] = {}
    meter.start()
    busy, stolen = machine_ticks()
    try:
        yield split
    finally:
        probe_ms = float(probe.communicate(timeout=60)[0] or 0.0)  # closes its input: it stops
    spent = meter.stop()
    busy_after, stolen_after = machine_ticks()
    split[PROBE] = (probe_ms, 0.0, 0.0, 0.0)
    kinds: dict[str, ThreadUse] = {}
    for name, use in spent.items():
        kinds[kind(name)] = kinds.get(kind(name), ZERO).plus(use)
    ours = sum(use.user + use.system for use in kinds.values())
    for label, use in kinds.items():
        split[label] = (1000 * use.user / transitions, 1000 * use.system / transitions,
                        use.voluntary / transitions, use.involuntary / transitions)  # fmt: skip
    split["the machine's other load"] = (1000 * (busy_after - busy - ours) / transitions, 0.0, 0.0, 0.0)
    split["the machine: stolen by the hypervisor"] = (1000 * (stolen_after - stolen) / transitions, 0.0, 0.0, 0.0)


def split_rows(splits: dict[str, list[dict]]) -> list[tuple[str, str, str]]:
    """One row per kind: medians over the rounds, off → on, and each round's on/off ratio."""
    rows = []
    for label in (*ORDER, PROBE):
        prefix = "split per transition" if label != PROBE else "the machine's speed"
        runs = {setting: [split.get(label, (0.0, 0.0, 0.0, 0.0)) for split in splits[setting]] for setting in ("off", "on")}
        if not any(sum(run) for setting in runs for run in runs[setting]):
            continue
        off, on = ([statistics.median(run[i] for run in runs[setting]) for i in range(4)] for setting in ("off", "on"))
        ratios = [(b[0] + b[1]) / (a[0] + a[1]) - 1 for a, b in zip(runs["off"], runs["on"]) if a[0] + a[1] > 0]
        note = f"rounds: {', '.join(f'{r:+.0%}' for r in ratios) or '-'}"
        if label.startswith(("module", "command", "this", "RabbitMQ")):
            note = (f"user {off[0]:.3f} → {on[0]:.3f}, system {off[1]:.3f} → {on[1]:.3f} ms; switches: voluntary "
                    f"{off[2]:.2f} → {on[2]:.2f}, involuntary {off[3]:.2f} → {on[3]:.2f}; {note}")  # fmt: skip
        rows.append((f"{prefix}, off → on: {label}", f"{off[0] + off[1]:.3f} → {on[0] + on[1]:.3f} ms", note))
    return rows
