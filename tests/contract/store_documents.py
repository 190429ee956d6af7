"""Realistic task documents for the store contract suites (the create_mysql flow's three steps),
and the engine's pure changes applied to them as a module and the engine would: claimed by
WORKER, sent, finished, written through the store's compare-and-set."""

from __future__ import annotations

from typing import Any

from common.engine.core.entries import (
    AttemptResult,
    Refusal,
    Timing,
    claim,
    create_task,
    finish_attempt,
    mark_sent,
)
from common.engine.document import Step, StepMessage, Task
from common.engine.states import ResultCode, TaskStatus
from common.store.tasks.mutate import mutate
from tests.support.builders import only_run

NOW = 1_700_000_000.25
WORKER = "worker-1"


def mysql_steps(retry: int = 2) -> list[Step]:
    def step(name: str, module: str, command: str, rollback: str | None) -> Step:
        return Step(
            Name=name,
            NormalModule=module,
            NormalCommand=command,
            NormalTimeout=30.0,
            NormalRetry=retry,
            RollbackModule=module if rollback else None,
            RollbackCommand=rollback,
            RollbackTimeout=20.0 if rollback else None,
            RollbackRetry=1 if rollback else None,
        )

    return [
        step("check", "resource", "check_resource", None),
        step("init", "mysql", "init_instance", "destroy_instance"),
        step("deduct", "resource", "deduct_resource", "refund_resource"),
    ]


def new_task(
    now: float = NOW,
    *,
    task_type: str = "create_mysql",
    key: str | None = None,
    start_at: float | None = None,
    redeliver_after: float = 60.0,
    retry: int = 2,
    **extra: Any,
) -> Task:
    return create_task(
        task_type=task_type,
        steps=mysql_steps(retry),
        parameters={"region": "eu-1", "size": "db.large", "disk_gb": 100},
        timing=Timing(now=now, redeliver_after=redeliver_after),
        start_at=start_at,
        idempotency_key=key,
        **extra,
    )


def claimed(task: Task, now: float) -> Task:
    """The active dispatch claimed by WORKER, as a module does on delivery."""
    active = only_run(task)
    assert active is not None
    step = task.Steps[active.Cursor]
    message = StepMessage(
        TaskId=task.TaskId,
        Cursor=active.Cursor,
        Type=active.Phase,
        Module=step.module(active.Phase),
        Command=step.command(active.Phase),
        Timeout=step.timeout(active.Phase),
        Retry=step.retry(active.Phase),
        DispatchId=active.DispatchId,
        Attempt=active.Attempt,
    )
    result = claim(task, message, WORKER, Timing(now=now))
    assert not isinstance(result, Refusal), result
    return result


def sent(task: Task) -> Task:
    """Every outbox entry confirmed by the broker."""
    for entry in list(task.Outbox):
        result = mark_sent(task, entry.DispatchId)
        assert not isinstance(result, Refusal)
        task = result
    return task


def finished(task: Task, now: float, result: AttemptResult) -> Task:
    assert only_run(task) is not None
    new = finish_attempt(task, only_run(task).DispatchId, WORKER, result, Timing(now=now))
    assert not isinstance(new, Refusal), new
    return new


def write(store: Any, task: Task, change: Any) -> Task:
    """Apply a pure change through the store's compare-and-set, as the engine does."""
    result = mutate(store, task.TaskId, change)
    assert not isinstance(result, Refusal), result
    return result


def single_step_succeeded() -> Task:
    """A one-step task that succeeded: no run, nothing in its outbox."""
    task = create_task(
        task_type="noop",
        steps=mysql_steps()[:1],
        parameters={},
        timing=Timing(now=NOW),
    )
    done = finished(claimed(sent(task), NOW + 1), NOW + 2, AttemptResult(ResultCode.OK))
    assert done.TaskStatus is TaskStatus.SUCCESS and only_run(done) is None and not done.Outbox
    return done
