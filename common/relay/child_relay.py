"""Flushing the outbox entries that concern another task (sub-flows, DESIGN.md sec. 6).

A `publish` entry goes to the broker; these go to the store: create the child (`start_child`),
tell the parent how its child ended (`child_finished`), roll a child back (`undo_child`), cancel
it (`cancel_child`), pause or resume it with its parent (`pause_child`, `resume_child`). Each is
idempotent (a child created twice is one task; a conclusion or an
undo already applied is refused), so the sweeper's relay may repeat any of them after a crash.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from common.engine.kinds.subflow_transitions import child_finished, start_child, undo
from common.errors import DuplicateTask, StoreError
from common.engine.document import OutboxEntry, Task
from common.engine.notifications import add_notifications
from common.engine.operator.actions import cancel, retry_rollback
from common.engine.operator.flow import pause, resume
from common.engine.states import TaskStatus
from common.store.mutate import mutate
from common.store.port import TaskStore
from common.engine.kinds.subflow import (
    CANCEL_CHILD,
    CHILD_FINISHED,
    PAUSE_CHILD,
    RESUME_CHILD,
    START_CHILD,
    UNDO_CHILD,
    child_finished_entry,
)
from common.engine.units import Refusal, Timing
from common.engine.gates.task_waits import TASK_FINISHED
from common.engine.gates.wait_transitions import awaited_finished

log = structlog.get_logger(__name__)


class ChildRelay:
    def __init__(self, store: TaskStore, timing: Callable[[], Timing], flush: Callable[[Task], None]):
        self._store = store
        self._timing = timing
        self._flush = flush  # publishes what a change here put in the changed task's outbox

    def apply(self, task_id: str, entry: OutboxEntry) -> bool:
        """Apply one entry; False when it could not be yet (the store failed, or the child it
        cancels, pauses or resumes is not created yet): the entry stays for the relay."""
        body = entry.Body
        try:
            if entry.Kind == START_CHILD:
                self._start(body)
            elif entry.Kind == CHILD_FINISHED:
                self._change(body["TaskId"], lambda t: child_finished(t, body, self._timing()))
            elif entry.Kind == UNDO_CHILD:
                self._change(body["TaskId"], lambda t: self._undo(t, body))
            elif entry.Kind in (CANCEL_CHILD, PAUSE_CHILD, RESUME_CHILD):
                if self._store.get(body["TaskId"]) is None:
                    return False  # its start_child is still owed: the relay applies this after it
                if entry.Kind == CANCEL_CHILD:
                    self._change(body["TaskId"], lambda t: cancel(t, _parent(body), _why(body), self._timing()))
                elif entry.Kind == PAUSE_CHILD:
                    self._change(body["TaskId"], lambda t: pause(t, _parent(body), _why(body), self._timing()))
                else:
                    self._change(body["TaskId"], lambda t: _resume_if_paused_by_parent(t, body, self._timing()))
            elif entry.Kind == TASK_FINISHED:  # a task waiting for this one (common.engine.gates.task_waits)
                self._change(body["TaskId"], lambda t: awaited_finished(
                    t, body["AwaitedTaskId"], TaskStatus(body["Status"]), self._timing()))
            else:
                log.error("unknown outbox entry kind; dropped", task_id=task_id, kind=entry.Kind)
        except StoreError as exc:
            log.warning("child entry not applied; the outbox relay will retry", task_id=task_id,
                        kind=entry.Kind, error=str(exc))
            return False
        return True

    def _start(self, body: dict) -> None:
        child = start_child(body, self._timing())
        add_notifications(None, child)
        try:
            self._store.insert(child)
        except DuplicateTask:
            return  # created already (a relay's repeat): its own outbox is relayed if need be
        log.info("child task created", task_id=child.TaskId, parent=body["ParentTaskId"])
        self._flush(child)

    def _undo(self, child: Task, body: dict) -> Task | Refusal:
        actor = f"parent {body['ParentTaskId']}"
        if child.TaskStatus is TaskStatus.ROLLBACK_FAILED:  # the parent retries its rollback
            return retry_rollback(child, actor, "the parent task retries its rollback", self._timing())
        if child.TaskStatus is TaskStatus.ROLLED_BACK:
            # Undone already (by hand, say): tell the parent again; its run waits for this.
            self._change(body["ParentTaskId"], lambda p: child_finished(
                p, child_finished_entry(child, self._timing().now).Body, self._timing()))
            return Refusal("child rolled back already")
        return undo(child, actor, self._timing())

    def _change(self, task_id: str, change: Callable[[Task], Task | Refusal]) -> None:
        changed = mutate(self._store, task_id, change)
        if isinstance(changed, Refusal):
            log.info("child entry already applied", task_id=task_id, reason=changed.reason)
            return
        self._flush(changed)


def _parent(body: dict) -> str:
    """The actor a parent's action is recorded with on its child."""
    return f"parent {body['ParentTaskId']}"


def _why(body: dict) -> str:
    return f"{body['Actor']}: {body['Reason']}"


def _resume_if_paused_by_parent(child: Task, body: dict, timing: Timing) -> Task | Refusal:
    """A parent's resume lifts only the pause it passed on: an operator's own pause of the child
    stays until they resume it."""
    if child.Paused is None or child.Paused.Actor != _parent(body):
        return Refusal("not paused by its parent")
    return resume(child, _parent(body), _why(body), timing)
