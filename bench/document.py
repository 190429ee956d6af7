"""The task document's share of a transition: what a module's store work costs, alone.

One process, a real SQLite store, no broker and no command: the three-step bench task created,
then each step claimed and its outcome committed (`mutate` with the claim's `known` task, as
the module does), timed in process CPU. Subtracted from a module's CPU per transition it tells
how much goes to everything around the store (threads, pika, logging, the command child): the
split docs/design/where-the-time-goes.md describes. Also a deferred mark-sent's CPU, in place
and as a read-change-write. `python -m bench.document` alone, or part of `make bench`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from common.engine.document import StepMessage, Task
from common.engine.states import ResultCode
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.changes import AttemptResult, Timing, claim, create_task, finish_attempt, mark_sent
from common.flows import parse_flows

OWNER = "bench@document"


def document_cpu(flows: str, tasks: int = 600) -> dict[str, float]:
    """CPU ms per transition of a module's store work, and the final document's size in bytes;
    beside it (`kept_cpu_ms_per_transition`), the same when each step after the first is claimed
    on the task as the commit before wrote it (a step after one in the same module process,
    common/runtime/last_written.py). The two ways take turns on tasks of their own."""
    flow = parse_flows(flows).get("bench")
    spent = {False: 0.0, True: 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "document.db")
        try:
            for kept in spent:
                _run(store, _created(store, flow.steps), len(flow.steps), kept)  # warm-up: imports, caches
            for index in range(2 * tasks):
                kept = bool(index % 2)
                task = _created(store, flow.steps)  # OSS's part: not counted
                started = time.process_time()
                last = _run(store, task, len(flow.steps), kept)
                spent[kept] += time.process_time() - started
        finally:
            store.close()
    steps = len(flow.steps)
    return {"cpu_ms_per_transition": 1000 * spent[False] / (tasks * steps),
            "kept_cpu_ms_per_transition": 1000 * spent[True] / (tasks * steps), "document_bytes": len(last.to_json())}


def _created(store: SqliteStore, steps: list) -> Task:
    task = create_task(task_type="bench", steps=steps, parameters={}, timing=Timing(time.time()))
    store.insert(task)
    return task


def _run(store: SqliteStore, task: Task, steps: int, kept: bool = False) -> Task:
    """Each step as a module does it: read at the claim (or, `kept`, from the second step on,
    the task as the commit before wrote it), claim, commit on the claimed task. The step message
    comes from the task as last written (a module gets it from the broker)."""
    done = task
    for step in range(steps):
        message = StepMessage.model_validate(done.Outbox[0].Body)
        known = done if kept and step else None
        claimed = mutate(store, task.TaskId, lambda t: claim(t, message, OWNER, Timing(time.time())), known=known)
        assert isinstance(claimed, Task), claimed
        ok = AttemptResult(ResultCode.OK)
        done = mutate(store, task.TaskId, lambda t: finish_attempt(t, message.DispatchId, OWNER, ok, Timing(time.time())),
                      known=claimed)  # fmt: skip
        assert isinstance(done, Task), done
    return done


def mark_sent_cpu(flows: str, tasks: int = 600) -> dict[str, float]:
    """CPU µs of a deferred mark-sent whose entry no claim removed (a submission while no module
    consumes): SQLite's in-place statement (TaskStore.drop_sent) beside the read-change-write
    it spares, taking turns, each on tasks of its own."""
    flow = parse_flows(flows).get("bench")
    spent = {"in_place": 0.0, "read_change_write": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "marks.db")
        try:
            for round_ in range(4):
                for way in spent if round_ % 2 else reversed(list(spent)):
                    entries = [(t.TaskId, t.Outbox[0].DispatchId) for t in (_created(store, flow.steps) for _ in range(tasks))]
                    started = time.process_time()
                    for task_id, dispatch_id in entries:
                        if way == "in_place":
                            assert store.drop_sent(task_id, dispatch_id)
                        else:
                            assert isinstance(mutate(store, task_id, lambda t, d=dispatch_id: mark_sent(t, d)), Task)
                    if round_:  # the first round warms up
                        spent[way] += time.process_time() - started
        finally:
            store.close()
    return {way: 1e6 * seconds / (3 * tasks) for way, seconds in spent.items()}


if __name__ == "__main__":
    from bench.engine import FLOWS

    result = document_cpu(FLOWS, int(os.environ.get("BATON_BENCH_DOCUMENT_TASKS", "600")))
    print(f"a module's store work per transition: {result['cpu_ms_per_transition']:.3f} ms CPU "
          f"(document {result['document_bytes']:,} bytes at the end); "
          f"{result['kept_cpu_ms_per_transition']:.3f} ms claiming on the task as the step before wrote it")
    marks = mark_sent_cpu(FLOWS, int(os.environ.get("BATON_BENCH_DOCUMENT_TASKS", "600")))
    print(f"a deferred mark-sent on SQLite: {marks['in_place']:.0f} us CPU in place, "
          f"{marks['read_change_write']:.0f} us as a read-change-write")
