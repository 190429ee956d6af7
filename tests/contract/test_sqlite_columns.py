"""SQLite's indexed columns follow the document whichever thread of the process wrote the task
last: a module claims and commits on a task another of its threads wrote, without reading it."""

from __future__ import annotations

import sqlite3
import threading

from common.engine.changes import AttemptResult, Timing, claim, create_task, finish_attempt
from common.engine.document import StepMessage
from common.engine.states import ResultCode
from common.store.sqlite.tasks import SqliteStore
from common.store.tasks.mutate import mutate
from tests.support.builders import counter_ids, make_step


def _in_thread(work):
    answer = []
    thread = threading.Thread(target=lambda: answer.append(work()))
    thread.start()
    thread.join()
    return answer[0]


def _columns(path, task_id):
    with sqlite3.connect(path) as db:
        return db.execute("SELECT version, status, deadline, outbox_due FROM tasks WHERE task_id = ?",
                          (task_id,)).fetchone()  # fmt: skip


def _expected(task):
    task._refresh_derived()  # noqa: SLF001
    return (task.Version, int(task.TaskStatus), task.SweepAt, task.OutboxDue)


def test_columns_follow_writes_on_known_tasks_across_threads(tmp_path):
    path = str(tmp_path / "t.db")
    store = SqliteStore(path)
    try:
        task = create_task(task_type="t", steps=[make_step("a"), make_step("b")], parameters={},
                           timing=Timing(100.0), ids=counter_ids())  # fmt: skip
        store.insert(task)
        for cursor in range(2):
            message = StepMessage.model_validate(task.Outbox[0].Body)
            # Claimed on one thread (on the task as the commit before wrote it, from the second
            # step on), committed on another, as a module's store threads do.
            known = None if cursor == 0 else task
            claimed = _in_thread(lambda: mutate(store, task.TaskId, lambda t: claim(t, message, "me", Timing(101.0)),
                                                known=known))  # fmt: skip
            assert _columns(path, task.TaskId) == _expected(claimed)
            ok = AttemptResult(ResultCode.OK)
            task = _in_thread(lambda: mutate(store, claimed.TaskId,
                                             lambda t: finish_attempt(t, message.DispatchId, "me", ok, Timing(102.0)),
                                             known=claimed))  # fmt: skip
            assert _columns(path, task.TaskId) == _expected(task)
        assert store.get(task.TaskId).Version == task.Version == 4
    finally:
        store.close()
