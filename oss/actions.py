"""Operator actions on stored tasks: the I/O shell around common.engine.operator.actions.

Read, apply the pure action, write with one compare-and-set (re-reading on a lost race, so a
module committing at the same moment is never overwritten), then publish what the action put in
the outbox.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import structlog

from common.errors import ActionRefused, UnknownTask
from common.input_limits import InputLimits, check_input
from common.logging import hidden_values
from common.masking import scrubbed_text, secret_values
from common.engine.document import Task
from common.engine.operator.actions import cancel, compensate, retry, retry_rollback
from common.engine.operator.flow import pause, resume, skip
from common.relay.outbox import OutboxPublisher
from common.store.mutate import mutate
from common.store.port import TaskStore
from common.engine.transitions import Refusal, Timing
from oss.action_names import ACTION_NAMES, SKIP

log = structlog.get_logger(__name__)

# Each action by its name (oss.action_names, as the API and the CLI spell them).
ACTIONS = dict(zip(ACTION_NAMES, (cancel, retry, retry_rollback, compensate, pause, resume), strict=True))


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
        check_input(self._limits, reason=reason, actor=actor)  # both go into the task's history
        if stop_running:
            if action != "cancel":
                raise ValueError("stop_running applies to cancel only")
            change = functools.partial(cancel, stop_running=True)
        if self._store.get(task_id) is None:  # tasks are never deleted: no race to fear here
            raise UnknownTask("no such task")  # the id asked for is not echoed
        # A reason may quote a secret parameter: it is stored scrubbed, like a command's error.
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
