"""What the processes and documents show beyond the invariants: logs, relays, backoff, deviations."""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections import Counter
from collections.abc import Iterable

from common.models import Task
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


def redispatch_excess(tasks: Iterable[Task], redeliver_after: float) -> list[str]:
    """Runs the sweeper re-published more often than its backoff allows.

    A run nobody claims is re-published after redeliver_after, then after 2x, 4x ... that, so a
    run that waited W seconds was re-published at most floor(log2(1 + W / redeliver_after)) + 1
    times (one of slack for the sweep period). Once per period would be a redelivery storm.
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
            allowed = math.floor(math.log2(1 + max(0.0, waited) / redeliver_after)) + 1
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
