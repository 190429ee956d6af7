"""What the processes and documents show beyond the invariants: logs, relays, backoff, deviations."""

from __future__ import annotations

import contextlib
import json
import math
import socket
import threading
import time
from collections import Counter
from datetime import datetime
from collections.abc import Iterable

import pika

from common.backoff import exponential
from common.engine.core.entries import MAX_REDISPATCH_BACKOFF
from common.engine.document import Task
from tests.chaos.invariants import ChaosReport
from tests.support.cluster import Proc


def log_events(proc: Proc) -> list[dict]:
    events = []
    for line in proc.log_text().splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                events.append(json.loads(line))
    return events


def sweeper_totals(cluster) -> Counter[str]:
    """What every sweeper process logged doing: leases lapsed, dispatches re-published, relays."""
    totals: Counter[str] = Counter()
    for proc in cluster.procs.values():
        if proc.args[-1] == "sweeper":
            for event in log_events(proc):
                if event.get("event") == "swept":
                    for key in ("lapsed", "redispatched", "relayed"):
                        totals[key] += int(event.get(key) or 0)
    return totals


def _backoff_allows(waited: float, redeliver_after: float) -> int:
    """How many re-publishes the engine's schedule (common.engine.core.entries: doubling from
    redeliver_after, capped at MAX_REDISPATCH_BACKOFF times it) fits in `waited` seconds, plus one
    of slack. Doubling alone allows too few once a run waits past the cap, as it does at load."""
    due, count = 0.0, 0
    while True:
        due += exponential(redeliver_after, count, redeliver_after * MAX_REDISPATCH_BACKOFF)
        if due > waited:
            return count + 1
        count += 1


def redispatch_excess(tasks: Iterable[Task], redeliver_after: float) -> list[str]:
    """Runs the sweeper re-published more often than its backoff allows.

    A run nobody claims is re-published after redeliver_after, then after 2x, 4x ... that, up to
    the engine's cap, so a run that waited W seconds was re-published at most as often as that
    schedule fits in W, plus one of slack for the sweep period. Once per period would be a
    redelivery storm.
    """
    excess = []
    for task in tasks:
        runs: dict[tuple, list] = {}
        for e in task.History:
            key = (e.Cursor, e.Phase, e.Attempt)
            if e.Event == "dispatched":
                runs.setdefault(key, [e.Time, None, 0])
            elif e.Event == "claimed" and key in runs and runs[key][1] is None:
                runs[key][1] = e.Time
            elif e.Event == "redispatched" and key in runs:
                runs[key][2] += 1
        for (cursor, phase, attempt), (dispatched, claimed, count) in runs.items():
            waited = (claimed if claimed is not None else task.TimeEnd or time.time()) - dispatched
            allowed = _backoff_allows(waited, redeliver_after)
            if count > allowed:
                excess.append(f"{task.TaskId} step {cursor} {phase.label} #{attempt}: re-published {count} "
                              f"times in {waited:.1f}s (backoff allows {allowed})")
    return excess


def fault_footprint(event) -> bool:
    if event.Event not in ("attempt_failed", "step_failed", "rollback_failed"):
        return False
    return event.Actor == "sweeper" or any(
        mark in event.Message for mark in ("command process died", "timed out", "cancelled", "lapsed")
    )


def assert_clean(cluster, report: ChaosReport, ids: Iterable[str] | None = None) -> None:
    problems = [] if report.ok else [report.summary()]
    unexplained = cluster.deviations(ids)
    if unexplained:
        problems.append("outcomes changed without a fault footprint:\n  " + "\n  ".join(unexplained[:20]))
    if problems:
        print(cluster.logs())
    assert not problems, "\n".join(problems)
    assert report.duplicate_commits == 0


def reconnect_seconds(cluster, reachable_at: float) -> dict[str, float]:
    """Per module process: seconds from the broker being reachable again (wall clock) until its
    consumer connected again, from its log. A process that never reconnected reads inf."""
    found: dict[str, float] = {}
    for name in cluster.module_names():
        times = [datetime.fromisoformat(e["timestamp"]).timestamp() for e in log_events(cluster.procs[name])
                 if e.get("event") == "broker.connected" and e.get("role") == "consumer"]
        after = [t for t in times if t >= reachable_at - 0.5]  # clocks: the log's, ours
        found[name] = max(0.0, min(after) - reachable_at) if after else math.inf
    return found


class PortWatch:
    """Notes (wall clock) when a TCP port first accepts a connection again, polling every 20 ms."""

    def __init__(self, port: int):
        self.port = port
        self.open_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-port-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                self.open_at = time.time()
                return
            time.sleep(0.02)

    def wait(self, timeout: float = 120) -> float:
        self._thread.join(timeout)
        self._stop.set()
        assert self.open_at is not None, f"port {self.port} never opened"
        return self.open_at


def drain(broker_url: str, queue: str) -> list[dict]:
    """Take every message now in `queue` off the broker (a purge that shows what it removed):
    the step messages' bodies."""
    taken: list[dict] = []
    connection = pika.BlockingConnection(pika.URLParameters(broker_url))
    try:
        channel = connection.channel()
        while True:
            method, _properties, body = channel.basic_get(queue, auto_ack=True)
            if method is None:
                return taken
            taken.append(json.loads(body))
    finally:
        connection.close()


def unrecovered(tasks: Iterable[Task], drained: list[dict]) -> list[str]:
    """Drained step messages whose dispatch no worker ever claimed: nothing re-published them
    (the sweeper's redispatch, or the outbox relay for an entry not yet marked sent). A claim
    before the drain counts too: the drained message was then a second copy (a redispatch of a
    run still waiting in the queue), and the dispatch had got through."""
    by_id = {t.TaskId: t for t in tasks}
    missing = []
    for body in drained:
        task = by_id.get(body["TaskId"])
        attempt = (body["Cursor"], body.get("Item"), body["Type"], body["Attempt"])
        claimed = task is not None and any(
            e.Event == "claimed" and (e.Cursor, e.Item, int(e.Phase), e.Attempt) == attempt
            for e in task.History if e.Phase is not None
        )
        if not claimed:
            missing.append(f"{body['TaskId']} {attempt}")
    return missing
