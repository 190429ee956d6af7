"""What bench/kinds.py and bench/celery_side.py both measure baton with: the three-step no-op
flow on a module of async commands and on a module of process commands, its tasks queued while
the module is stopped and timed from the module's start to the last task's end, in rounds that
alternate the order of what they compare.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple, TypeVar

from bench.engine import wait_all
from bench.procstat import tree, usage
from tests.support.cluster import Cluster

KINDS = ("async", "process")
STEPS = 3
FLOWS = """
version: 1
defaults: {timeout: 600, retry: 0}
task_types:
  await_io:
    parameters:
      seconds: {type: number}
    steps:
      - name: wait
        normal: {module: asyncbench, command: wait}
""" + "".join(
    f"""  {kind}_noop:
    steps:
""" + "".join(f"""      - name: s{n}
        normal: {{module: {kind}bench, command: noop}}
""" for n in range(STEPS)) for kind in KINDS)
REGISTRIES = {f"{kind}bench": f"bench.kind_commands:{kind}bench" for kind in KINDS}

Way = TypeVar("Way")


@contextmanager
def kind_modules(workdir: Path, amqp_url: str) -> Iterator[Cluster]:
    """A cluster running one module of each kind (SQLite store), stopped on leaving."""
    workdir.mkdir(parents=True, exist_ok=True)
    # A lease long enough that renewing a thousand of them is not the bench's work.
    cluster = Cluster(workdir, amqp_url, FLOWS, extra_env={"BATON_FAULT_INJECTION": "0", "BATON_LEASE_SECONDS": "30"})
    try:
        for module, registry in REGISTRIES.items():
            cluster.start_module(module, registry=registry)
        yield cluster
    finally:
        cluster.stop_all()


def warm_up(cluster: Cluster, tasks: int) -> None:
    """Drain `tasks` tasks on each module, unmeasured: imports, caches, children."""
    for kind in KINDS:
        drain(cluster, kind, tasks)


class Drained(NamedTuple):
    seconds: float  # from the module's start to the last task's end
    module_cpu: float  # CPU seconds of the module and its children meanwhile
    broker_cpu: float  # CPU seconds of the broker process meanwhile (0 without one)


def drain(cluster: Cluster, kind: str, tasks: int, broker: int | None = None) -> Drained:
    """Queue `tasks` no-op tasks with the kind's module stopped, start it and wait for the last
    to end. Submitted while it runs, the one submitting thread of this process would set the pace."""
    module = f"{kind}bench"
    cluster.kill(module, signal.SIGTERM)
    ids = [cluster.submit(f"{kind}_noop").TaskId for _ in range(tasks)]
    cluster.restart(module)  # returns once it consumes
    pid = cluster.procs[module].popen.pid
    cpu, broker_cpu, started = tree_cpu(pid), process_cpu(broker), time.perf_counter()
    wait_all(cluster, ids, timeout=600)
    return Drained(time.perf_counter() - started, tree_cpu(pid) - cpu, process_cpu(broker) - broker_cpu)


def alternating(ways: Sequence[Way], rounds: int) -> Iterator[Way]:
    """The ways, round after round, every other round in reverse order: a drift of the machine's
    load during the run weighs on all of them alike."""
    for round_ in range(rounds):
        yield from ways if round_ % 2 == 0 else reversed(ways)


def tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) of a process and its descendants: the living ones', and those
    of the ended ones their parents waited for (a command child that ends within a window would
    otherwise take its CPU out of the tree's sum, and the window's difference could be none or
    less than none)."""
    return sum(u.cpu_seconds + u.waited_cpu_seconds for p in tree(pid) if (u := usage(p)) is not None)


def tree_rss(pid: int) -> tuple[int, int]:
    """The RSS of a process and all its descendants, and how many processes that is."""
    sizes = [u.rss_bytes for p in tree(pid) if (u := usage(p)) is not None]
    return sum(sizes), len(sizes)


def process_cpu(pid: int | None) -> float:
    """CPU seconds of one process, 0 without one (or once it is gone)."""
    got = usage(pid) if pid else None
    return got.cpu_seconds if got else 0.0
