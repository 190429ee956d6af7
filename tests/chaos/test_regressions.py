"""Pure regression tests for engine bugs the chaos scenarios found (see each test's docstring)."""

from __future__ import annotations

import itertools

from common.engine.document import StepMessage, Task
from common.engine.core.units import publish_entry
from common.engine.core.entries import (
    Refusal,
    Timing,
    claim,
    create_task,
    expire,
    mark_sent,
    release,
)
from tests.support.builders import counter_ids, make_step, only_run

REDELIVER = 10.0


def unclaimed_task() -> Task:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(0.0, redeliver_after=REDELIVER),
                       ids=counter_ids())
    return mark_sent(task, only_run(task).DispatchId)  # published; its message now waits in a queue


def redispatch_times(task: Task, until: float, step: float = 0.5) -> list[float]:
    """Run the sweeper's `expire` every `step` seconds until `until`; when it re-published."""
    times = []
    now = 0.0
    while now < until:
        now += step
        changed = expire(task, Timing(now, redeliver_after=REDELIVER))
        if not isinstance(changed, Refusal):
            task = mark_sent(changed, only_run(changed).DispatchId)
            times.append(now)
    return times


def test_a_run_waiting_in_a_long_queue_is_republished_with_backoff_not_every_period():
    """Found by the full `mysql queue purged mid-run` scenario: with a backlog longer than
    BATON_REDELIVER_AFTER_SECONDS the sweeper re-published every waiting dispatch once per
    period; each copy lengthened the queue, so more dispatches waited past their deadline, and
    the queue grew without bound (13,162 messages in mysql, 166 tasks never settled in 240 s).
    A run nobody claimed is re-published after the period, then after twice that, four times..."""
    times = redispatch_times(unclaimed_task(), until=20 * REDELIVER)
    assert times == [REDELIVER * 2**k for k in range(5)]  # 10, 20, 40, 80, 160 s; was every 10 s


def test_the_first_republication_still_comes_after_one_period():
    """A message lost for good (purged) is still healed after `redeliver_after`, as before."""
    times = redispatch_times(unclaimed_task(), until=REDELIVER + 1)
    assert times == [REDELIVER]


def test_backoff_is_capped_so_a_message_lost_late_is_still_healed():
    times = redispatch_times(unclaimed_task(), until=200 * REDELIVER, step=1.0)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert max(gaps) <= 16 * REDELIVER + 1, gaps


def test_a_new_dispatch_of_the_same_attempt_starts_its_backoff_afresh():
    """The backoff counts re-publications of the current dispatch only: a step released by a
    shutdown (same attempt, new dispatch id) is healed after one period again."""
    task = unclaimed_task()
    for now in (REDELIVER, 3 * REDELIVER):  # re-published twice: the second waits two periods
        task = mark_sent(expire(task, Timing(now, redeliver_after=REDELIVER)), only_run(task).DispatchId)
    assert only_run(task).Deadline == 3 * REDELIVER + 2 * REDELIVER
    message = StepMessage.model_validate(publish_entry(task, only_run(task), 0.0).Body)
    now = 3 * REDELIVER + 1
    task = claim(task, message, "w1", Timing(now, redeliver_after=REDELIVER))
    task = release(task, message.DispatchId, "w1", Timing(now, redeliver_after=REDELIVER), ids=counter_ids("r"))
    task = mark_sent(task, only_run(task).DispatchId)
    assert only_run(task).Deadline == now + REDELIVER
    again = expire(task, Timing(now + REDELIVER, redeliver_after=REDELIVER))
    assert only_run(again).Deadline == now + 2 * REDELIVER  # first re-publication of this dispatch
