"""Operator actions on stored tasks: the I/O shell around common.engine.operator.actions.

Read, apply the pure action, write with one compare-and-set (re-reading on a lost race, so a
module committing at the same moment is never overwritten), then publish what the action put in
the outbox.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import structlog

from common.errors import ActionForbidden, ActionRefused, InvalidInput, UnknownStepAction, UnknownTask
from common.input_limits import InputLimits, check_input
from common.secrets.free_text import masked_free_text
from common.secrets.log_lines import hidden_values
from common.secrets.documents import scrubbed_text
from common.secrets.values import secret_values
from common.engine.document import Task
from common.engine.changes import (
    ActRequest,
    Forbidden,
    NoSuch,
    Refusal,
    Timing,
    cancel,
    check_reason,
    act_on_step,
    compensate,
    noted_item_skip,
    pause,
    redrive,
    resume,
    retry,
    retry_rollback,
    rollback,
    skip,
    skip_item,
)
from common.step_index import BadStepIndex, NoSuchUnit, step_index
from common.engine.views import keeps_records
from common.relay.outbox import OutboxPublisher
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from oss.services.action_names import ACTION_NAMES, SKIP

log = structlog.get_logger(__name__)

# Each action by its name (oss.services.action_names, as the API and the CLI spell them).
# redrive and rollback decide on a task held by a failure (common.engine.operator.hold); they take
# the same shape as the others, so they can move onto a generic action route with them.
ACTIONS = dict(zip(ACTION_NAMES, (cancel, retry, retry_rollback, compensate, pause, resume, redrive, rollback),
                   strict=True))


class OperatorActions:
    def __init__(
        self,
        store: TaskStore,
        publisher: OutboxPublisher,
        clock: Callable[[], float],
        redeliver_after: float,
        limits: InputLimits | None = None,
    ):
        self._store = store
        self._publisher = publisher
        self._clock = clock
        self._redeliver_after = redeliver_after
        self._limits = limits or InputLimits()

    def apply(self, action: str, task_id: str, actor: str, reason: str, *, stop_running: bool = False,
              unit: tuple[int, int | None] | None = None) -> Task:  # fmt: skip
        """The task as written. UnknownTask, or ActionRefused when it does not fit the state.

        `stop_running` (cancel only): claimed runs are stopped now instead of finishing.
        `unit` (skip only, and required): (step index, item index or None); ValueError when the
        task has no such unit."""
        if (action == SKIP) != (unit is not None):
            raise ValueError("skip, and skip only, names a step")
        change = functools.partial(skip, cursor=unit[0], item=unit[1]) if unit is not None else ACTIONS[action]
        check_input(self._limits, ("actor",), reason=reason, actor=actor)  # both go into the task's history
        if stop_running:
            if action != "cancel":
                raise ValueError("stop_running applies to cancel only")
            change = functools.partial(cancel, stop_running=True)
        found = self._store.get(task_id)
        if found is None:  # tasks are never deleted: no race to fear here
            raise UnknownTask("no such task")  # the id asked for is not echoed
        if unit is not None and unit[1] is not None and 0 <= unit[0] < len(found.Steps) \
                and keeps_records(found.Steps[unit[0]]):
            return self._skip_item(found, unit[0], unit[1], actor, reason)
        return self.apply_change(action, task_id, actor, reason, change)

    def apply_change(self, action: str, task_id: str, actor: str, reason: str, change: Callable[..., Task | Refusal]) -> Task:
        """One pure operator change (task, actor, reason, timing) written with one
        compare-and-set, logged, and its outbox published. ActionRefused: it does not fit."""
        # A reason may quote a secret parameter: it is stored scrubbed, like a command's error;
        # and a secret of its own (`password=...`, a URL's password): masked wherever it goes.
        reason = masked_free_text(reason)
        result = mutate(
            self._store,
            task_id,
            lambda task: change(task, actor, scrubbed_text(reason, task),
                                Timing(self._clock(), redeliver_after=self._redeliver_after)),
        )
        if isinstance(result, Refusal):
            raise ActionRefused(result.reason)
        with hidden_values(secret_values(result)):  # a reason may quote a secret parameter
            log.info("operator action", action=action, task_id=task_id, actor=actor, reason=reason,
                     task_status=result.TaskStatus.name)
        self._publisher.flush(result)
        return result

    def act_on_step(self, task_id: str, step: str, action: str, actor: str, roles: frozenset[str], reason: str) -> Task:
        """A person's action on a step that waits for people (approve, reject), written with one
        compare-and-set: two processes acting at once are applied one after the other, each on
        what the other wrote. UnknownTask; ActionForbidden (who asks may not); ActionRefused."""
        check_input(self._limits, ("actor",), reason=reason, actor=actor)  # both go into the step and its history
        check_reason(reason)
        reason = masked_free_text(reason)  # as an operator action's: `password=...`, a URL's password
        try:
            step_index(step)
        except BadStepIndex as exc:  # "00" is not step 0: the request's form
            raise InvalidInput([("step", str(exc))]) from None
        if self._store.get(task_id) is None:
            raise UnknownTask("no such task")

        def change(task: Task) -> Task | Refusal:
            timing = Timing(self._clock(), redeliver_after=self._redeliver_after)
            request = ActRequest(actor=actor, roles=roles, reason=scrubbed_text(reason, task), time=timing.now)
            return act_on_step(task, step, action, request, timing)

        result = mutate(self._store, task_id, change)
        if isinstance(result, Forbidden):
            raise ActionForbidden(result.reason)
        if isinstance(result, NoSuch):
            raise UnknownStepAction(result.field, result.reason)
        if isinstance(result, Refusal):
            raise ActionRefused(result.reason)
        with hidden_values(secret_values(result)):  # a reason may quote a secret parameter
            log.info("step action", action=action, task_id=task_id, step=step, actor=actor, reason=reason,
                     task_status=result.TaskStatus.name)
        self._publisher.flush(result)
        return result

    def _skip_item(self, task: Task, cursor: int, item: int, actor: str, reason: str) -> Task:
        """Skip one item of a step over records: a compare-and-set on its record, settled as an
        item's outcome (its chain goes on, the step may conclude); then the task's history says
        who skipped it and why."""
        check_reason(reason)
        reason = masked_free_text(reason)
        count = task.Steps[cursor].ItemCount or 0
        if not 0 <= item < count:
            raise NoSuchUnit("item", f"item {item}: step {cursor} has {count} items")
        said = scrubbed_text(reason, task)
        record = self._publisher.item_store.get_item(task.TaskId, task.Generation, cursor, item)
        if record is None:
            raise ActionRefused(f"item {item} of step {cursor} has not started: only an item that keeps failing can be skipped")
        timing = Timing(self._clock(), redeliver_after=self._redeliver_after)
        skipped = self._publisher.items.change_item(record, lambda r: skip_item(r, task, actor, said, timing))
        if isinstance(skipped, Refusal):
            raise ActionRefused(skipped.reason)
        result = mutate(self._store, task.TaskId, lambda t: noted_item_skip(t, cursor, item, actor, said, self._clock()))
        with hidden_values(secret_values(task)):
            log.info("operator action", action=SKIP, task_id=task.TaskId, actor=actor, reason=reason, step=cursor, item=item)
        return result if isinstance(result, Task) else task
