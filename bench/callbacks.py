"""What a command waiting for a callback costs (docs/design/callbacks.md), on SQLite:
`BATON_BENCH_CALLBACK_TASKS` (default 500) tasks of two command steps each have step 0's command
ask for a token (one compare-and-set), answer await_callback (the module's commit, parking the
run) and be called back through the route's service (a read, the change, one compare-and-set
and the outbox's publish on the in-process broker). The baseline is the same step ending with
plain output (the module's commit and its publish). One process, no HTTP. `python -m bench.callbacks`
alone, or part of `make bench`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from common.broker.inprocess import InProcessBroker
from common.engine.changes import AttemptResult, Timing, claim, create_task, finish_attempt
from common.engine.commands import await_callback, new_token, open_callback, parse_await, token_hash
from common.engine.document import Step, StepMessage, Task
from common.engine.states import ResultCode
from common.relay.outbox import OutboxPublisher
from common.store.sqlite.tasks import SqliteStore
from common.store.tasks.mutate import mutate
from oss.services.callbacks import Callbacks


def _steps() -> list[Step]:
    return [Step(Name=f"s{i}", NormalModule="m", NormalCommand="c") for i in range(2)]


def _claimed(store: SqliteStore, n: int) -> tuple[str, str]:
    task = create_task(task_type="bench", steps=_steps(), parameters={}, timing=Timing(time.time()), task_id=f"cb{n:08d}")
    task.Outbox = []  # nobody publishes step 0: it is claimed here
    store.insert(task)
    run = task.Runs[0]
    message = StepMessage(TaskId=task.TaskId, Cursor=0, Type=run.Phase, Module="m", Command="c", Timeout=60, Retry=0,
                          DispatchId=run.DispatchId, Attempt=1)  # fmt: skip
    mutate(store, task.TaskId, lambda t: claim(t, message, "w", Timing(time.time())))
    return task.TaskId, run.DispatchId


def callback_figures(tasks: int = 500) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        store, broker = SqliteStore(Path(tmp) / "bench.db"), InProcessBroker()
        broker.declare("m")
        publisher = OutboxPublisher(store, broker, time.time)
        callbacks = Callbacks(store, publisher, time.time, 60.0)
        try:
            plain = [_claimed(store, n) for n in range(tasks)]
            started = time.perf_counter()
            for task_id, dispatch in plain:  # committed, then the next step published, as a module does
                publisher.flush(mutate(store, task_id, lambda t, d=dispatch: finish_attempt(
                    t, d, "w", AttemptResult(ResultCode.OK), Timing(time.time()))))
            baseline = (time.perf_counter() - started) / tasks
            waiting = [_claimed(store, tasks + n) for n in range(tasks)]
            tokens, marks = [], [time.perf_counter()]
            for task_id, dispatch in waiting:
                token = new_token(task_id)
                mutate(store, task_id, lambda t, d=dispatch, h=token_hash(token): open_callback(t, d, "w", h))
                tokens.append(token)
            marks.append(time.perf_counter())
            parked = AttemptResult(ResultCode.OK, callback=parse_await(await_callback(3600)))  # type: ignore[arg-type]
            for task_id, dispatch in waiting:
                mutate(store, task_id, lambda t, d=dispatch: finish_attempt(t, d, "w", parked, Timing(time.time())))
            marks.append(time.perf_counter())
            for token in tokens:
                callbacks.answer(token, "succeed", {"done": True}, "", True)
            marks.append(time.perf_counter())
            done: Task | None = store.get(waiting[-1][0])
            assert done is not None and done.Steps[0].State.value == "succeeded"
        finally:
            store.close()
            broker.close()
    token_ms, park_ms, answer_ms = ((marks[i + 1] - marks[i]) / tasks * 1000 for i in range(3))
    return {"tasks": tasks, "baseline_ms": baseline * 1000, "token_ms": token_ms, "park_ms": park_ms,
            "answer_ms": answer_ms}


def rows(tasks: int) -> list[tuple[str, str, str]]:
    f = callback_figures(tasks)
    total = f["token_ms"] + f["park_ms"] + f["answer_ms"]
    return [("a step ended by a callback on SQLite", f"{total:.2f} ms",
             f"the token's write {f['token_ms']:.2f} ms, the park {f['park_ms']:.2f} ms, the callback "
             f"{f['answer_ms']:.2f} ms; a step ending with its output: {f['baseline_ms']:.2f} ms")]


if __name__ == "__main__":
    for name, value, note in rows(int(os.environ.get("BATON_BENCH_CALLBACK_TASKS", "500"))):
        print(f"{name}: {value} ({note})")
