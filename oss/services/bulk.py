"""Operator actions on every task a filter selects, with a dry run that says what would happen.

The dry run evaluates the action's pure change (common.engine.operator.actions) on each matching task
without writing anything, so its count of tasks the action fits is exact at that moment. The
real run applies the action task by task through OperatorActions (one compare-and-set each,
recorded in each task's history with the operator and the reason); a task whose state changed
in between is refused and listed, never forced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from common.secrets.free_text import masked_free_text
from common.errors import ActionRefused, UnknownTask, UnreadableTask
from common.input_limits import InputLimits, check_input
from common.secrets.log_lines import hidden_values
from common.secrets.values import secret_values
from common.engine.document import Task
from common.store.tasks import unreadable
from common.store.tasks.port import TaskStore
from common.access import Scope
from common.store.tasks.filters import TaskFilter
from common.store.tasks.paging import iterate_tasks
from common.engine.changes import Refusal, Timing
from oss.services.action_names import MAX_BULK_TASKS as MAX_TASKS
from oss.services.actions import ACTIONS, OperatorActions

log = structlog.get_logger(__name__)


@dataclass
class BulkResult:
    action: str
    dry_run: bool
    matched: int = 0  # tasks the filter selects (up to the limit)
    applied: list[str] = field(default_factory=list)  # dry run: the action would fit these
    refused: list[tuple[str, str]] = field(default_factory=list)  # (task id, why not)
    truncated: bool = False  # more tasks match than the limit let through


class BulkActions:
    def __init__(self, store: TaskStore, actions: OperatorActions, clock: Callable[[], float], redeliver_after: float):
        self._store = store
        self._actions = actions
        self._clock = clock
        self._redeliver_after = redeliver_after

    def run(
        self,
        action: str,
        filters: Mapping[str, Any],
        *,
        actor: str,
        reason: str,
        dry_run: bool,
        limit: int = 1000,
        scope: Scope | None = None,
    ) -> BulkResult:
        """`filters`: the fields of a TaskFilter; at least one must be given. `scope`:
        only tasks in these namespaces (a scoped token's) are matched, counted or changed."""
        if action not in ACTIONS:
            raise ValueError("unknown action")
        require_a_filter(filters)
        check_input(InputLimits(), ("actor",), actor=actor, reason=reason)  # a dry run refuses what the run would
        result = BulkResult(action, dry_run)
        tasks, result.truncated = self._matching({**filters, "scope": scope}, min(limit, MAX_TASKS))
        result.matched = len(tasks)
        for task in tasks:
            if unreadable.is_placeholder(task):  # its document cannot be read: nothing to act on
                result.refused.append((task.TaskId, "the stored document cannot be read (see its alarm)"))
                continue
            outcome = self._dry(action, task, actor, reason) if dry_run else self._apply(action, task, actor, reason)
            if outcome is None:
                result.applied.append(task.TaskId)
            else:
                result.refused.append((task.TaskId, outcome))
        if not dry_run:
            # The reason may quote a secret of any of the tasks: hide all of theirs in this line.
            with hidden_values(value for task in tasks for value in secret_values(task)):
                log.info("bulk action", action=action, actor=actor, reason=masked_free_text(reason), matched=result.matched,
                         applied=len(result.applied), refused=len(result.refused))  # fmt: skip
        return result

    def _matching(self, filters: Mapping[str, Any], limit: int) -> tuple[list[Task], bool]:
        found = list(iterate_tasks(self._store, limit + 1, TaskFilter(**filters)))  # one more: are there more?
        return found[:limit], len(found) > limit

    def _dry(self, action: str, task: Task, actor: str, reason: str) -> str | None:
        timing = Timing(self._clock(), redeliver_after=self._redeliver_after)
        changed = ACTIONS[action](task, actor, reason, timing)
        return changed.reason if isinstance(changed, Refusal) else None

    def _apply(self, action: str, task: Task, actor: str, reason: str) -> str | None:
        try:
            self._actions.apply(action, task.TaskId, actor, reason)
        except (ActionRefused, UnknownTask, UnreadableTask) as exc:
            return str(exc)
        return None


def require_a_filter(filters: dict[str, Any]) -> None:
    """A bulk action on every task is never what was meant: ValueError unless a filter is given."""
    if not any(value not in (None, {}, "") for value in filters.values()):
        raise ValueError("give at least one filter: a bulk action on every task is never what was meant")
