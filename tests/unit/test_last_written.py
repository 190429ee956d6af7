"""Which committed tasks a module keeps for the claim of their next step (common/runtime/last_written.py)."""

from __future__ import annotations

from common.engine.changes import Timing, create_task
from common.engine.document import OutboxEntry
from common.runtime.last_written import LastWritten
from tests.support.builders import counter_ids, make_step


def _task(task_id: str = "t1", module: str = "mod"):
    return create_task(task_type="t", steps=[make_step("a", module=module), make_step("b", module=module)],
                       parameters={}, timing=Timing(100.0), ids=counter_ids(), task_id=task_id)  # fmt: skip


def test_a_task_whose_next_step_comes_here_is_kept_for_one_claim():
    kept, task = LastWritten("mod"), _task()
    kept.keep(task, now=100.0)
    assert kept.take("t1") is task
    assert kept.take("t1") is None  # one claim only: it edits the task in place


def test_a_task_whose_next_step_goes_elsewhere_or_later_or_with_more_is_not_kept():
    kept = LastWritten("mod")
    kept.keep(_task("elsewhere", module="other"), now=100.0)
    kept.keep(_task("later"), now=99.0)  # its entry is due after now: a timer holds it
    more = _task("more")
    more.Outbox.append(OutboxEntry(DispatchId="w", Kind="webhook", Body={}, DueAt=100.0))
    kept.keep(more, now=100.0)
    assert len(kept) == 0


def test_the_oldest_kept_task_goes_first():
    kept = LastWritten("mod", size=2)
    for task_id in ("a", "b", "c"):
        kept.keep(_task(task_id), now=100.0)
    assert kept.take("a") is None and kept.take("b") is not None and kept.take("c") is not None


def test_size_zero_keeps_nothing():
    kept = LastWritten("mod", size=0)
    kept.keep(_task(), now=100.0)
    assert kept.take("t1") is None
