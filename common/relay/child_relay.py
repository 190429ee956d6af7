"""Flushing the outbox entries that concern another task (sub-flows, docs/design/sub-flows.md).

A `publish` entry goes to the broker; these go to the store: create the child (`start_child`),
tell the parent how its child ended (`child_finished`), roll a child back (`undo_child`), cancel
it (`cancel_child`), pause or resume it with its parent (`pause_child`, `resume_child`). Each is
idempotent (a child created twice is one task; a conclusion or an
undo already applied is refused), so the sweeper's relay may repeat any of them after a crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from common.engine.changes import (
    Refusal,
    Timing,
    add_notifications,
    awaited_finished,
    cancel,
    child_finished,
    child_finished_entry,
    pause,
    resume,
    retry_rollback,
    start_child,
    undo,
)
from common.errors import DuplicateTask, StoreClosed, StoreError
from common.engine.document import OutboxEntry, Task
from common.engine.states import TaskStatus
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from common.engine.codes import OutboxKind
from common.engine.outbox import body_of
from common.tracing import task_spans

if TYPE_CHECKING:  # the bodies are the sub-flow kind's own; body_of reads an entry as one
    from common.engine.kinds.sub_flow.bodies import ChildActionBody, UndoChildBody

log = structlog.get_logger(__name__)


class ChildRelay:
    def __init__(self, store: TaskStore, timing: Callable[[], Timing], flush: Callable[[Task], None]):
        self._store = store
        self._timing = timing
        self._flush = flush  # publishes what a change here put in the changed task's outbox
        self._handlers = self.handlers()

    def handlers(self) -> dict[OutboxKind, Callable[[OutboxEntry], bool]]:
        """This relay's rows of the flushers' table (common.engine.outbox.FLUSHERS)."""
        return {
            OutboxKind.START_CHILD: lambda e: self._start(e.Body),
            OutboxKind.CHILD_FINISHED: lambda e: self._change(
                body_of(e.Kind, e.Body).TaskId, lambda t: child_finished(t, e.Body, self._timing())),
            OutboxKind.UNDO_CHILD: self._undo_child,
            OutboxKind.CANCEL_CHILD: lambda e: self._act(e, lambda t, b: cancel(t, _parent(b), _why(b), self._timing(),
                                                                             stop_running=b.StopRunning)),
            OutboxKind.PAUSE_CHILD: lambda e: self._act(e, lambda t, b: pause(t, _parent(b), _why(b), self._timing())),
            OutboxKind.RESUME_CHILD: lambda e: self._act(e, lambda t, b: _resume_if_paused_by_parent(t, b, self._timing())),
            OutboxKind.TASK_FINISHED: self._awaited_finished,  # a task waiting for this one (gates.task_waits)
        }

    def apply(self, task_id: str, entry: OutboxEntry) -> bool:
        """Apply one entry; False when it could not be yet (the store failed, or the child it
        cancels, pauses or resumes is not created yet): the entry stays for the relay."""
        handler = self._handlers.get(entry.Kind)
        if handler is None:
            log.error("not a child entry; dropped", task_id=task_id, kind=entry.Kind)
            return True
        try:
            return handler(entry)
        except StoreError as exc:
            # Closed by this process's shutdown: the next process's relay applies it, no outage.
            say = log.debug if isinstance(exc, StoreClosed) else log.warning
            say("child entry not applied; the outbox relay will retry", task_id=task_id, kind=entry.Kind, error=str(exc))
            return False

    def _act(self, entry: OutboxEntry, action: Callable[[Task, ChildActionBody], Task | Refusal]) -> bool:
        """A parent's cancel, pause or resume passed on to its child."""
        body = body_of(entry.Kind, entry.Body)
        if self._store.get(body.TaskId) is None:
            return False  # its start_child is still owed: the relay applies this after it
        return self._change(body.TaskId, lambda t: action(t, body))

    def _awaited_finished(self, entry: OutboxEntry) -> bool:
        body = body_of(entry.Kind, entry.Body)
        return self._change(body.TaskId, lambda t: awaited_finished(
            t, body.AwaitedTaskId, TaskStatus(body.Status), self._timing()))

    def _start(self, body: dict) -> bool:
        with task_spans.sub_flow(body) as span:  # the child's trace goes on from its start's span
            child = start_child(body, self._timing(), trace=span.trace)
            add_notifications(None, child)
            try:
                self._store.insert(child)
            except DuplicateTask:
                return True  # created already (a relay's repeat): its own outbox is relayed if need be
            span.created(child.TaskId)
            log.info("child task created", task_id=child.TaskId, parent=body["ParentTaskId"])
            self._flush(child)
        return True

    def _undo_child(self, entry: OutboxEntry) -> bool:
        body = body_of(entry.Kind, entry.Body)
        return self._change(body.TaskId, lambda t: self._undo(t, body))

    def _undo(self, child: Task, body: UndoChildBody) -> Task | Refusal:
        actor = f"parent {body.ParentTaskId}"
        if child.TaskStatus is TaskStatus.ROLLBACK_FAILED:  # the parent retries its rollback
            return retry_rollback(child, actor, "the parent task retries its rollback", self._timing())
        if child.TaskStatus is TaskStatus.ROLLED_BACK:
            # Undone already (by hand, say): tell the parent again; its run waits for this.
            self._change(body.ParentTaskId, lambda p: child_finished(
                p, child_finished_entry(child, self._timing().now).Body, self._timing()))
            return Refusal("child rolled back already")
        return undo(child, actor, self._timing())

    def _change(self, task_id: str, change: Callable[[Task], Task | Refusal]) -> bool:
        changed = mutate(self._store, task_id, change)
        if isinstance(changed, Refusal):
            log.info("child entry already applied", task_id=task_id, reason=changed.reason)
            return True
        self._flush(changed)
        return True


def _parent(body: ChildActionBody) -> str:
    """The actor a parent's action is recorded with on its child."""
    return f"parent {body.ParentTaskId}"


def _why(body: ChildActionBody) -> str:
    return f"{body.Actor}: {body.Reason}"


def _resume_if_paused_by_parent(child: Task, body: ChildActionBody, timing: Timing) -> Task | Refusal:
    """A parent's resume lifts only the pause it passed on: an operator's own pause of the child
    stays until they resume it."""
    if child.Paused is None or child.Paused.Actor != _parent(body):
        return Refusal("not paused by its parent")
    return resume(child, _parent(body), _why(body), timing)
