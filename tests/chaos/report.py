"""The per-scenario figures: one row per scenario, printed as a table at the end of the run."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from common.engine.document import Task
from tests.chaos.invariants import ChaosReport


@dataclass
class Row:
    scenario: str
    tasks: int
    faults: str
    statuses: str
    executions: int
    duplicate_executions: int
    duplicate_commits: int
    lost_attempts: int
    settle_seconds: float
    run_seconds: float
    violations: int


ROWS: list[Row] = []


def record(scenario: str, report: ChaosReport, faults: str, settle: float, run: float) -> Row:
    order = ["SUCCESS", "ROLLED_BACK", "ROLLBACK_FAILED"]
    statuses = " ".join(f"{s[:1] if s != 'ROLLBACK_FAILED' else 'F'}={report.statuses.get(s, 0)}" for s in order)
    others = {k: v for k, v in report.statuses.items() if k not in order}
    if others:
        statuses += " " + " ".join(f"{k}={v}" for k, v in others.items())
    row = Row(scenario, report.tasks, faults, statuses, report.executions, report.duplicate_executions,
              report.duplicate_commits, report.lost_attempts, round(settle, 1), round(run, 1), len(report.violations))
    ROWS.append(row)
    print(f"\nCHAOS {json.dumps(row.__dict__)}")
    return row


def table(rows: list[Row]) -> str:
    headers = ["scenario", "tasks", "faults injected", "final S/R/F", "execs", "dup execs",
               "dup commits", "lost", "settle s", "run s", "violations"]
    cells = [[r.scenario, str(r.tasks), r.faults, r.statuses, str(r.executions), str(r.duplicate_executions),
              str(r.duplicate_commits), str(r.lost_attempts), f"{r.settle_seconds:.1f}", f"{r.run_seconds:.1f}",
              str(r.violations)] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    def line(values: list[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths))

    return "\n".join([line(headers), "-+-".join("-" * w for w in widths), *map(line, cells)])


def timeline(task: Task) -> str:
    """A task's History with times relative to its creation: what to read when a run was slow."""
    start = task.TimeCreate
    lines = [f"task {task.TaskId} {task.TaskStatus.name} in {((task.TimeEnd or time.time()) - start):.2f}s"]
    for e in task.History:
        where = f"step {e.Cursor} {e.Phase.label} #{e.Attempt}" if e.Cursor is not None else ""
        lines.append(f"  +{e.Time - start:7.3f} {e.Event:<19} {where:<22} {e.Actor or ''} {e.Message}")
    return "\n".join(lines)


def slowest(tasks: list[Task], count: int = 3) -> str:
    tasks = sorted(tasks, key=lambda t: (t.TimeEnd or time.time()) - t.TimeCreate, reverse=True)
    return "\n".join(timeline(t) for t in tasks[:count])


def failover_table(failovers: dict[str, dict[str, str]]) -> str:
    """One row per process connection, one column per fault: how long after the fault that
    connection was open on a live node again ("-": it was not on the node that went down)."""
    faults = list(failovers)
    rows = sorted({connection for found in failovers.values() for connection in found})
    headers = ["process connection", *faults]
    cells = [[row, *(failovers[fault].get(row, "-") for fault in faults)] for row in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return " | ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()

    return "\n".join([line(headers), "-+-".join("-" * w for w in widths), *map(line, cells)])
