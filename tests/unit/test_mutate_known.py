"""mutate(known=...): a module commits its outcome on the task as it claimed it, without a read,
unless somebody wrote the task since (then it reads, as always). On a real SQLite store."""

from __future__ import annotations

import time
from typing import Any

from common.engine.document import StepMessage, Task
from common.engine.states import ResultCode
from common.engine.core.units import AttemptResult
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Refusal, Timing, claim, create_task, finish_attempt, renew_lease
from tests.support.builders import make_step, only_run


class CountedReads:
    """The real store, counting its reads."""

    def __init__(self, inner: SqliteStore):
        self._inner = inner
        self.reads = 0

    def get(self, task_id: str) -> Any:
        self.reads += 1
        return self._inner.get(task_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def claimed_task(store: SqliteStore) -> tuple[Task, Any]:
    now = time.time()
    task = create_task(task_type="t", steps=[make_step("a"), make_step("b")], parameters={}, timing=Timing(now))
    store.insert(task)
    message = task.Outbox[0].Body

    step = StepMessage.model_validate(message)
    claimed = mutate(store, task.TaskId, lambda t: claim(t, step, "me", Timing(now)))
    assert isinstance(claimed, Task)
    return claimed, step


def test_the_outcome_is_written_on_the_claimed_task_without_reading_it(tmp_path):
    inner = SqliteStore(tmp_path / "tasks.db")
    store = CountedReads(inner)
    try:
        claimed, step = claimed_task(inner)
        claimed_version = claimed.Version  # `known` is given up: the change edits it in place
        ok = AttemptResult(ResultCode.OK, "")
        done = mutate(store, claimed.TaskId, lambda t: finish_attempt(t, step.DispatchId, "me", ok, Timing(time.time())), known=claimed)  # type: ignore[arg-type]
        assert isinstance(done, Task) and store.reads == 0
        stored = inner.get(claimed.TaskId)
        assert stored.Version == claimed_version + 1 and stored.Steps[0].State.value == "succeeded"
    finally:
        inner.close()


def test_a_write_since_the_claim_makes_it_read_and_lose_nothing(tmp_path):
    inner = SqliteStore(tmp_path / "tasks.db")
    store = CountedReads(inner)
    try:
        claimed, step = claimed_task(inner)
        renewed = mutate(inner, claimed.TaskId, lambda t: renew_lease(t, step.DispatchId, "me", Timing(time.time() + 5)))
        assert isinstance(renewed, Task)
        ok = AttemptResult(ResultCode.OK, "")
        done = mutate(store, claimed.TaskId, lambda t: finish_attempt(t, step.DispatchId, "me", ok, Timing(time.time())), known=claimed)  # type: ignore[arg-type]
        assert isinstance(done, Task) and store.reads == 1
        stored = inner.get(claimed.TaskId)
        assert stored.Version == renewed.Version + 1
        assert only_run(stored).Deadline is not None  # the renewal's successor run, not lost
    finally:
        inner.close()


def test_a_refusal_on_the_known_task_is_checked_again_on_the_stored_one(tmp_path):
    inner = SqliteStore(tmp_path / "tasks.db")
    store = CountedReads(inner)
    try:
        claimed, step = claimed_task(inner)
        stale = claimed.clone()
        stale.Runs = []  # what this process believes: no run of ours (wrong)
        ok = AttemptResult(ResultCode.OK, "")
        done = mutate(store, claimed.TaskId, lambda t: finish_attempt(t, step.DispatchId, "me", ok, Timing(time.time())), known=stale)  # type: ignore[arg-type]
        assert isinstance(done, Task) and not isinstance(done, Refusal) and store.reads == 1
    finally:
        inner.close()
