"""The store port. The engine sees only this; adapters live beside it.

Every change to a task is ONE compare-and-set of the whole document on its `Version`: the caller
reads, computes the new document with a pure function from `common.engine.core.entries`, bumps `Version`
and calls `compare_and_set`. A writer holding an old version loses and re-reads, so a duplicate,
late or stale worker can never overwrite a newer outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from common.engine.document import Alarm, HistoryEvent, Task
from common.engine.states import TaskStatus
from common.store.tasks.filters import ALL_TASKS, TaskFilter


class TaskStore(Protocol):
    """Every `limit` below returns [] when <= 0 (stores disagree on what 0 would mean)."""

    def insert(self, task: Task) -> None:
        """Store a new task. Raises DuplicateTask if its TaskId or IdempotencyKey is taken."""

    def get(self, task_id: str) -> Task | None: ...

    def version_of(self, task_id: str) -> int | None:
        """The stored task's Version (None: no such task), without reading its document."""

    def get_by_idempotency_key(self, key: str) -> Task | None: ...

    def compare_and_set(self, task: Task, expected_version: int) -> bool:
        """Replace the stored task iff its Version still equals `expected_version`.

        `task.Version` must already be `expected_version + 1` (ValueError otherwise). False when
        another writer won (or the task does not exist); nothing is written then.
        """

    def due_for_sweep(self, now: float, limit: int) -> list[Task]:
        """Tasks whose `SweepAt` is <= now: lapsed leases, unclaimed dispatches, a passed task deadline
        or a wait to check again (docs/design/task-document.md and docs/design/operations.md)."""

    def waiting_unclaimed(self, since_before: float, limit: int) -> list[Task]:
        """Tasks with a run PENDING (nobody claimed it) and due since before `since_before`
        (`Runs[].Since`), longest waiting first."""

    def unsent_outbox(self, due_before: float, limit: int) -> list[Task]:
        """Tasks holding an outbox entry with `DueAt` <= due_before (oldest first)."""

    def in_outbox(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of these (TaskId, DispatchId) outbox entries are still in their task's outbox,
        in one light query: a publisher checks a batch of deferred mark-sents at once, and
        reads and writes only the tasks whose entry no claim has removed yet."""

    def drop_sent(self, task_id: str, dispatch_id: str) -> bool:
        """Mark one outbox entry sent without reading its task: the stored document edited in
        place as `mark_sent` through `mutate` would write it (the entry removed, Version bumped,
        OutboxDue the earliest DueAt left). False when nothing was written: the entry is not
        there, or this store cannot edit that document in place; the caller then takes the
        read-change-write way, which decides."""

    def drop_sent_many(self, entries: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """drop_sent for each of these (TaskId, DispatchId) entries, a batch of writes at a time;
        the ones written. Those left out are the caller's to settle as drop_sent's False says."""

    def archive_history(self, task_id: str, first_index: int, events: list[HistoryEvent]) -> None:
        """Keep events moved out of a task's document (common.engine.core.history) as event numbers
        first_index, first_index + 1, ...: an upsert, so writing them again is harmless."""

    def archived_history(self, task_id: str, start: int, stop: int) -> list[HistoryEvent]:
        """The archived events numbered start <= n < stop, in order (fewer once retention
        deleted some)."""

    def prune_history(self, before: float) -> int:
        """Delete archived events older than `before` (their `Time`); how many went."""

    def list_tasks(self, task_filter: TaskFilter = ALL_TASKS, *, limit: int = 100) -> list[Task]:
        """At most `limit` tasks the filter selects, newest first: TimeCreate descending, then
        TaskId descending (common/store/tasks/filters.py says what each field of the filter holds
        to; `after` is the page key of the last task of the previous page: the answer starts
        strictly after it)."""

    def count_tasks(self, task_filter: TaskFilter) -> dict[TaskStatus, int]:
        """How many tasks match, per status (statuses with none are left out)."""

    def try_lock(self, name: str, owner: str, now: float, ttl: float) -> bool:
        """Take or renew the named lock until now+ttl. False while someone else holds it.

        A lock counts as lapsed only once its expiry is strictly before `now`.
        """

    def release_lock(self, name: str, owner: str) -> None:
        """Give the lock up if `owner` holds it; otherwise do nothing."""

    def add_alarm(self, alarm: Alarm) -> bool:
        """Store an alarm. False (and nothing written) if its AlarmId exists: delivery repeats."""

    def list_alarms(self, *, acknowledged: bool | None = None, limit: int = 100) -> list[Alarm]:
        """Newest first."""

    def acknowledge_alarm(
        self, alarm_id: str, by: str, now: float, reason: str | None = None
    ) -> Alarm | None:
        """Mark acknowledged (by whom, when, why); returns the alarm, or None if unknown. A
        second acknowledgement leaves the first one's name, time and reason in place."""

    def ping(self) -> None:
        """Raise StoreError if the store cannot be reached."""

    def close(self) -> None: ...
