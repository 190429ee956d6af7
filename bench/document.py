"""The task document's share of a transition: what a module's store work costs, alone.

One process, a real SQLite store, no broker and no command: the three-step bench task created,
then each step claimed and its outcome committed (`mutate` with the claim's `known` task, as
the module does), timed in process CPU. Subtracted from a module's CPU per transition it tells
how much goes to everything around the store (threads, pika, logging, the command child): the
split DESIGN.md sec. 11 describes. `python -m bench.document` alone, or part of `make bench`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from common.engine.document import StepMessage, Task
from common.engine.states import ResultCode
from common.store.mutate import mutate
from common.store.sqlite import SqliteStore
from common.engine.transitions import AttemptResult, Timing, claim, create_task, finish_attempt
from common.flows import parse_flows

OWNER = "bench@document"


def document_cpu(flows: str, tasks: int = 600) -> dict[str, float]:
    """CPU ms per transition of a module's store work, and the final document's size in bytes."""
    flow = parse_flows(flows).get("bench")
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "document.db")
        try:
            _run(store, _created(store, flow.steps), len(flow.steps))  # warm-up: imports, caches
            spent = 0.0
            for _ in range(tasks):
                task = _created(store, flow.steps)  # OSS's part: not counted
                started = time.process_time()
                last = _run(store, task, len(flow.steps))
                spent += time.process_time() - started
        finally:
            store.close()
    steps = len(flow.steps)
    return {"cpu_ms_per_transition": 1000 * spent / (tasks * steps), "document_bytes": len(last.to_json())}


def _created(store: SqliteStore, steps: list) -> Task:
    task = create_task(task_type="bench", steps=steps, parameters={}, timing=Timing(time.time()))
    store.insert(task)
    return task


def _run(store: SqliteStore, task: Task, steps: int) -> Task:
    """Each step as a module does it: read at the claim, claim, commit on the claimed task. The
    step message comes from the task as last written (a module gets it from the broker)."""
    done = task
    for _ in range(steps):
        message = StepMessage.model_validate(done.Outbox[0].Body)
        claimed = mutate(store, task.TaskId, lambda t: claim(t, message, OWNER, Timing(time.time())))
        assert isinstance(claimed, Task), claimed
        ok = AttemptResult(ResultCode.OK)
        done = mutate(store, task.TaskId, lambda t: finish_attempt(t, message.DispatchId, OWNER, ok, Timing(time.time())),
                      known=claimed)  # fmt: skip
        assert isinstance(done, Task), done
    return done


if __name__ == "__main__":
    from bench.engine import FLOWS

    result = document_cpu(FLOWS, int(os.environ.get("BATON_BENCH_DOCUMENT_TASKS", "600")))
    print(f"a module's store work per transition: {result['cpu_ms_per_transition']:.3f} ms CPU "
          f"(document {result['document_bytes']:,} bytes at the end)")
