"""A callback from another system (`POST /api/v1/callbacks/{token}`, docs/design/callbacks.md):
the I/O shell around common.engine.kinds.command.callback.

The token names its task; the change finds the run by the token's hash and is written with one
compare-and-set (re-reading on a lost race, so two callbacks at once are applied one after the
other, and the second is refused). What the change put in the outbox is then published. The
token is never logged: a log line names the task, the step and the attempt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from common.engine.changes import CallbackRefused, CallbackTaken, Refusal, Timing, answer_callback
from common.engine.commands import ANSWER_KEY, task_of, token_hash
from common.engine.document import Task
from common.errors import BatonError, InvalidInput
from common.input_limits import InputLimits, check_input
from common.relay.outbox import OutboxPublisher
from common.secrets.documents import scrubbed_text
from common.secrets.free_text import masked_free_text
from common.secrets.values import secret_leaves, secret_values
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore

log = structlog.get_logger(__name__)


class CallbackNotTaken(BatonError):
    """A callback that changes nothing: its HTTP status (404, 409, 410) and why."""

    def __init__(self, status: int, reason: str, field: str | None = None):
        super().__init__(reason)
        self.status, self.field = status, field


class _Unchanged(Refusal):
    """Nothing to write (a heartbeat for a command that has not begun waiting)."""


@dataclass(frozen=True)
class CallbackAnswer:
    action: str
    state: str  # the run's state now: waiting, kept, succeeded, failed, running


class Callbacks:
    def __init__(self, store: TaskStore, publisher: OutboxPublisher, clock: Callable[[], float],
                 redeliver_after: float, limits: InputLimits | None = None):  # fmt: skip
        self._store = store
        self._publisher = publisher
        self._clock = clock
        self._redeliver_after = redeliver_after
        self._limits = limits or InputLimits()

    def answer(self, token: str, action: str, output: dict[str, Any], message: str, retryable: bool) -> CallbackAnswer:
        """Take the callback. InvalidInput (422) for an output or message over the limits;
        CallbackNotTaken for an unknown token (404), one answered already (409), one whose wait
        is over (410), or an output that would set a secret parameter (422)."""
        # The message is another system's free text, bound for the history and the console: a reason's rules.
        check_input(self._limits, free_text=("message",), output=output, message=message)
        if ANSWER_KEY in output:
            raise InvalidInput([(f"output.{ANSWER_KEY}", "is baton's own key: a callback's output may not hold it")])
        task_id = task_of(token)
        if task_id is None:
            raise CallbackNotTaken(404, "no such callback token")
        hashed = token_hash(token)
        taken: list[CallbackTaken] = []

        def change(task: Task) -> Task | Refusal:
            timing = Timing(self._clock(), redeliver_after=self._redeliver_after)
            # It may quote a secret parameter, or a secret of its own output: stored masked, as the
            # output of a kept answer the command's own outcome replaces is not kept to mask it by.
            hidden = list(secret_leaves(output, ()).union(secret_values(task)))
            said = scrubbed_text(masked_free_text(message), task, hidden)
            outcome = answer_callback(task, hashed, action, output, said, retryable, timing)  # type: ignore[arg-type]
            if isinstance(outcome, CallbackRefused):
                return outcome
            taken[:] = [outcome]
            return outcome.task if outcome.task is not None else _Unchanged("nothing to write")

        written = mutate(self._store, task_id, change)
        if isinstance(written, CallbackRefused):
            log.info("callback refused", task_id=task_id, action=action, status=written.status, reason=written.reason)
            raise CallbackNotTaken(written.status, written.reason, written.field)
        if not taken:  # no such task: the same answer as an unknown token
            raise CallbackNotTaken(404, "no such callback token")
        outcome = taken[0]
        log.info("callback taken", task_id=task_id, step=outcome.cursor, phase=outcome.phase, attempt=outcome.attempt,
                 action=action, state=outcome.state)
        if not isinstance(written, Refusal):
            self._publisher.flush(written)
        return CallbackAnswer(action, outcome.state)
