"""Moving the tasks of a type in flight to the revision flows.yaml holds now: the I/O shell
around common.engine.operator.migrate (docs/design/operator-actions.md).

A dry run (the default) evaluates the pure change on every not-started and running task of the
type without writing, so its answer is exact at that moment. Applying it writes task by task
through OperatorActions (one compare-and-set each, recorded in the task's history with the
operator and reason), deciding again on the document read then: a step that started since the
dry run may now refuse the move, and the task is listed as refused, never forced.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from common.errors import ActionRefused, StoreError, UnknownTask, UnreadableTask
from common.input_limits import InputLimits, check_input, quoted
from common.secrets.free_text import masked_free_text
from common.secrets.log_lines import hidden_values
from common.secrets.values import secret_values
from common.flows import FlowCatalog
from common.flows.catalog import FlowDefinition
from common.engine.document import Task
from common.engine.views import LockKeyError
from common.engine.changes import Refusal, Revision, Timing, migrate
from common.engine.states import TaskStatus
from common.store.tasks import unreadable
from common.access import Scope
from common.store.tasks.filters import TaskFilter
from common.store.tasks.paging import iterate_tasks
from common.store.tasks.port import TaskStore
from oss.services.action_names import MAX_BULK_TASKS
from oss.services.actions import OperatorActions

log = structlog.get_logger(__name__)
IN_FLIGHT = (TaskStatus.NOT_STARTED, TaskStatus.RUNNING)


@dataclass
class MigrationResult:
    task_type: str
    to_hash: str
    to_version: str | None
    dry_run: bool
    matched: int = 0  # tasks of the type in flight (up to the limit)
    moved: list[str] = field(default_factory=list)  # dry run: the tasks that would move
    current: list[str] = field(default_factory=list)  # already on the revision
    refused: list[tuple[str, str]] = field(default_factory=list)  # (task id, what is in doubt)
    truncated: bool = False  # more tasks in flight than the limit let through


class Migrations:
    def __init__(self, store: TaskStore, flows: FlowCatalog, actions: OperatorActions,
                 clock: Callable[[], float], redeliver_after: float):  # fmt: skip
        self._store = store
        self._flows = flows
        self._actions = actions
        self._clock = clock
        self._redeliver_after = redeliver_after

    def run(self, task_type: str, to: str, *, actor: str, reason: str, dry_run: bool,
            limit: int = 1000, scope: Scope | None = None) -> MigrationResult:  # fmt: skip
        """ValueError: an unknown type, or `to` naming a revision the service does not run.
        `scope`: only the tasks in these namespaces (a scoped token's) are matched and moved."""
        check_input(InputLimits(), ("actor",), actor=actor, reason=reason)  # both go into every moved task's history
        reason = masked_free_text(reason)  # as an operator action's: `password=...`, a URL's password
        flow = self._target(task_type, to)
        result = MigrationResult(task_type, flow.content_hash, flow.version, dry_run)
        tasks, result.truncated = self._in_flight(task_type, min(limit, MAX_BULK_TASKS), scope)
        result.matched = len(tasks)
        for task in tasks:
            if unreadable.is_placeholder(task):
                result.refused.append((task.TaskId, "the stored document cannot be read (see its alarm)"))
            elif task.FlowHash == flow.content_hash:
                result.current.append(task.TaskId)
            else:
                outcome = self._move(task, flow, actor, reason, dry_run)
                if outcome is None:
                    result.moved.append(task.TaskId)
                elif not dry_run and self._moved_meanwhile(task.TaskId, flow):
                    result.current.append(task.TaskId)  # another call moved it since we read it: not refused
                else:
                    result.refused.append((task.TaskId, outcome))
        if not dry_run:
            # The reason may quote a secret of any of the tasks: hide all of theirs in this line.
            with hidden_values(value for task in tasks for value in secret_values(task)):
                log.info("tasks migrated", task_type=task_type, to=flow.content_hash, actor=actor, reason=reason,
                         matched=result.matched, moved=len(result.moved), refused=len(result.refused))  # fmt: skip
        return result

    def _target(self, task_type: str, to: str) -> FlowDefinition:
        if task_type not in self._flows.task_types:
            raise ValueError(f"unknown task type {quoted(task_type)}")
        flow = self._flows.get(task_type)
        if to not in (flow.content_hash, flow.version):
            runs = f"version {flow.version}, {flow.content_hash}" if flow.version else flow.content_hash
            # Quoted with every control and invisible character escaped: a bidi override in the
            # client's string must not turn the answer (or the terminal showing it) around.
            raise ValueError(f"{task_type} runs {runs} here: --to {quoted(to)} names no revision this service holds")
        return flow

    def _moved_meanwhile(self, task_id: str, flow: FlowDefinition) -> bool:
        """A move refused because another call (a concurrent `migrate --apply`) moved the task to
        this very revision after we read it: the task is on it, which is what was asked."""
        try:
            found = self._store.get(task_id)
        except (UnreadableTask, StoreError):
            return False
        return found is not None and found.FlowHash == flow.content_hash

    def _in_flight(self, task_type: str, limit: int, scope: Scope | None) -> tuple[list[Task], bool]:
        found: list[Task] = []
        for status in IN_FLIGHT:
            found += iterate_tasks(self._store, limit + 1 - len(found),
                                   TaskFilter(task_type=task_type, status=status, scope=scope))
            if len(found) > limit:
                break
        return found[:limit], len(found) > limit

    def _move(self, task: Task, flow: FlowDefinition, actor: str, reason: str, dry_run: bool) -> str | None:
        revision = revision_for(flow, task)
        if isinstance(revision, str):
            return revision
        change = functools.partial(migrate, revision=revision)
        if dry_run:
            changed = change(task, actor, reason, Timing(self._clock(), redeliver_after=self._redeliver_after))
            return changed.reason if isinstance(changed, Refusal) else None
        try:
            self._actions.apply_change("migrate", task.TaskId, actor, reason, change)
        except (ActionRefused, UnknownTask, UnreadableTask) as exc:
            return str(exc)
        return None


def revision_for(flow: FlowDefinition, task: Task) -> Revision | str:
    """The revision as it applies to this task, or why its parameters do not fit it."""
    check = flow.validate(task.SubmittedParameters)
    if not check.ok:
        return "its parameters do not fit the new revision: " + "; ".join(f"{e.path}: {e.message}" for e in check.errors)
    try:
        lock = flow.lock_ask(check.parameters)
    except LockKeyError as exc:
        return f"the new revision's lock key cannot be made from its parameters: {exc}"
    return Revision(flow.steps, flow.content_hash, flow.version, dict(check.parameters), lock)
