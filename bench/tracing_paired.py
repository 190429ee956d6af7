"""Tracing off and on at the same moments: two clusters of bench/tracing.py side by side, one
untraced and one traced, each on a vhost of its own, fed the same tasks in turn.

Runs taken one after the other, even moments apart, meet different loads on a shared machine:
the CPU time a thread needs for the same work moves with what else runs on its cores (tens of
percent from run to run, the untraced runs against each other as much as against the traced
ones). Side by side, both clusters meet the same load at the same moments, so their ratio holds
what tracing costs. And the whole backlog is queued while both clusters' modules are paused
(SIGSTOP): a run that starts while the tasks are still being submitted is paced by the
submitting process (its submissions traced or not, the receiver beside them) more than by the
modules, and a module fed slowly spends more CPU per transition (a wake-up per message, where a
backlog has it take several at once). Each cluster's figures run from the modules' resumption
to its last task's end.
"""

from __future__ import annotations

import os
import signal
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.engine import STEPS, _module_pids, throughput
from bench.procstat import CpuMeter, descendants
from bench.submission_tracing import submissions_traced
from common.engine.states import FINAL_STATUSES
from tests.support.cluster import Cluster
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.vhosts import rabbitmq_vhost

SETTINGS = ("off", "on")
CHUNK = 50  # tasks submitted to one cluster before the other's turn


def paired_rows(workdir: Path, tasks: int, rounds: int, receiver: OtlpReceiver) -> list[tuple[str, str, str]]:
    """Rows: per round, the on/off ratios of the modules' CPU per transition and of the
    transitions/s, both clusters running at once; the median over the rounds is the verdict."""
    from bench.tracing import start_cluster  # here: bench.tracing imports this module


    cpu_ratios, rate_ratios = [], []
    for round_ in range(rounds):
        with rabbitmq_vhost("baton-bench-traced") as on_url, rabbitmq_vhost("baton-bench-untraced") as off_url:
            clusters: dict[str, Cluster] = {}
            try:
                for setting, url in (("off", off_url), ("on", on_url)):
                    clusters[setting] = start_cluster(workdir / f"paired-{setting}-{round_}", url, setting, receiver)
                rates, cpu = _side_by_side(clusters, tasks, receiver, first=SETTINGS[round_ % 2])
            finally:
                for cluster in clusters.values():
                    cluster.stop_all()
        cpu_ratios.append(cpu["on"] / cpu["off"])
        rate_ratios.append(rates["on"] / rates["off"])
    where = f"both clusters at once, {tasks} tasks each; median of {rounds} rounds"
    return [
        ("baton, tracing on beside off at once: module CPU per transition",
         f"{statistics.median(cpu_ratios) - 1:+.0%} on off", f"{where}: {', '.join(f'{r - 1:+.0%}' for r in cpu_ratios)}"),
        ("baton, tracing on beside off at once: step transitions",
         f"{statistics.median(rate_ratios):.0%} of off", f"{where}: {', '.join(f'{r:.0%}' for r in rate_ratios)}"),
    ]  # fmt: skip


def _side_by_side(clusters: dict[str, Cluster], tasks: int, receiver: OtlpReceiver,
                  first: str) -> tuple[dict[str, float], dict[str, float]]:  # fmt: skip
    """(transitions/s, module CPU ms per transition) of each setting, each until its last task ended."""
    with submissions_traced(receiver) as traced:
        for setting, cluster in clusters.items():  # warm-up: imports, caches, queues
            traced(setting == "on")
            throughput(cluster, min(200, tasks))
        meters = {setting: CpuMeter({"modules": lambda c=cluster: _module_pids(c),
                                     "children": lambda c=cluster: descendants(_module_pids(c))})
                  for setting, cluster in clusters.items()}  # fmt: skip
        ids: dict[str, list[str]] = {setting: [] for setting in clusters}
        order = (first, *(s for s in SETTINGS if s != first))
        with paused([pid for cluster in clusters.values() for pid in _module_pids(cluster)]):
            for _ in range(0, tasks, CHUNK):
                for setting in order:
                    traced(setting == "on")
                    ids[setting] += [clusters[setting].submit("bench").TaskId for _ in range(CHUNK)]
            traced(False)
            for meter in meters.values():
                meter.start()
            started = time.perf_counter()
        pending = {setting: list(found) for setting, found in ids.items()}
        ended: dict[str, tuple[float, float]] = {}  # setting -> (seconds, module CPU seconds) when done
        while len(ended) < len(clusters):
            for setting, left in pending.items():
                while left and clusters[setting].store.get(left[0]).TaskStatus in FINAL_STATUSES:
                    left.pop(0)
                if not left and setting not in ended:
                    ended[setting] = (time.perf_counter() - started, sum(meters[setting].stop().values()))
            time.sleep(0.02)
    transitions = tasks * STEPS
    rates = {setting: transitions / seconds for setting, (seconds, _) in ended.items()}
    cpu = {setting: 1000 * spent / transitions for setting, (_, spent) in ended.items()}
    return rates, cpu


@contextmanager
def paused(pids: list[int]) -> Iterator[None]:
    """The processes `pids` stopped inside (SIGSTOP), resumed on leaving: a backlog queued
    inside is there whole when they resume."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
