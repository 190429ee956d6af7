"""The reconciler's I/O: read what the modules' records and the store say, plan (modules/mysql/reconcile_rules,
pure), and, when asked, carry the plan out. `baton reconcile` and the sweeper's periodic job
(BATON_RECONCILE_INTERVAL_SECONDS) both use it.

Acting re-checks at the last moment what the plan relied on: the task is still ROLLED_BACK (an
operator may have restarted it since), the ownership row still has the owner key it had (a new
run's instance is never touched), under the instance's lock (the same removal as the task's own
rollback, tombstone included), and only what still carries baton's mark is dropped
(provision.presence). What it did is logged with the reason and who asked, and recorded in the
task's history.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pymysql
import structlog

from common.errors import BatonError
from common.engine.document import Task
from common.engine.states import TaskStatus
from common.store.tasks.port import TaskStore
from common.store.tasks.mutate import mutate
from common.store.tasks.filters import TaskFilter, page_key
from common.engine.changes import noted
from modules.mysql import provision
from modules.mysql.server import LockBusy, OwnedInstance, Server
from modules.mysql.settings import MysqlSettings
from modules.mysql.reconcile_rules import (
    Action,
    InstanceRecord,
    Plan,
    ReservationRecord,
    ServerView,
    TaskFacts,
    plan,
    run_of_owner_key,
    task_of_claim,
)

if TYPE_CHECKING:  # the resource module's, reached through its hook (common.module_hooks)
    from modules.resource.inventory import Inventory

log = structlog.get_logger(__name__)
PAGE = 500
UNFINISHED = (TaskStatus.NOT_STARTED, TaskStatus.RUNNING, TaskStatus.ROLLING_BACK)
HISTORY_EVENT = "reconciled"


@dataclass
class Survey:
    plan: Plan
    problems: list[str] = field(default_factory=list)  # a part that could not be read: the plan is partial


@dataclass(frozen=True)
class Outcome:
    action: Action
    done: bool
    note: str


class Reconciler:
    def __init__(
        self,
        store: TaskStore,
        inventory: Inventory | None,
        mysql: MysqlSettings | None,
        clock: Callable[[], float] = time.time,
        actor: str = "reconciler",
    ):
        self._store = store
        self._inventory = inventory
        self._mysql = mysql
        self._clock = clock
        self._actor = actor  # who asked: recorded with every removal

    def survey(self) -> Survey:
        problems: list[str] = []
        # Tasks before the server: an instance a task creates or drops meanwhile is then either
        # skipped (still in flight) or already on (off) the server when it is read.
        in_flight = [name for status in UNFINISHED for task in self._tasks(status) if (name := _named(task))]
        successes = list(self._tasks(TaskStatus.SUCCESS))
        dropped = [name for task in successes if (name := _dropped_name(task))]
        facts = [f for f in map(_facts, successes) if f.instance]
        instances, server = self._server_facts(problems)
        if facts and server is None:
            problems.append(f"MySQL: could not check the instances of {len(facts)} successful tasks; "
                            "nothing is reported about them")  # fmt: skip
        reservations = self._reservations(problems)
        owner_ids = {row.owner_task for row in instances}
        owner_ids |= {t for t in (task_of_claim(c.key) for c in reservations) if t is not None}
        owners = {tid: _facts(task) for tid in sorted(owner_ids) if (task := self._store.get(tid)) is not None}
        return Survey(plan(instances, reservations, owners, facts, dropped, server, in_flight), problems)

    def apply(self, actions: list[Action], reason: str = "found by the reconciler") -> list[Outcome]:
        if not any(a.kind == "remove_instance" for a in actions):
            return [self._act(action, None, reason) for action in actions]
        try:
            with self._server() as server:
                return [self._act(action, server, reason) for action in actions]
        except pymysql.err.MySQLError as exc:  # could not connect: nothing was done
            return [Outcome(action, False, f"failed: MySQL: {exc}") for action in actions]

    # --- reading -------------------------------------------------------------------------------

    def _server_facts(self, problems: list[str]) -> tuple[list[InstanceRecord], ServerView | None]:
        """The ownership rows with what stands on the server under each name, and what the server
        holds; ([], None) when it cannot be read (or is not configured)."""
        if self._mysql is None:
            return [], None
        try:
            with self._server() as server:
                assert server is not None
                view = ServerView(frozenset(server.all_databases()), frozenset(server.all_users()),
                                  self._mysql.user_host)  # fmt: skip
                if not server.meta_exists():
                    return [], view
                return [_record(r, provision.presence(server, r)) for r in server.all_owned()], view
        except (pymysql.err.MySQLError, BatonError) as exc:
            problems.append(f"MySQL: {exc}")
            return [], None

    def _reservations(self, problems: list[str]) -> list[ReservationRecord]:
        if self._inventory is None:
            return []
        try:
            claims = self._inventory.list_claims(self._clock(), live_only=True)
        except BatonError as exc:
            problems.append(f"inventory: {exc}")
            return []
        return [ReservationRecord(c.key, c.holder, c.host, c.state.value) for c in claims]

    def _tasks(self, status: TaskStatus) -> Iterator[Task]:
        after = None
        while True:
            page = self._store.list_tasks(TaskFilter(status=status, after=after), limit=PAGE)
            yield from page
            if len(page) < PAGE:
                return
            after = page_key(page[-1])

    # --- acting --------------------------------------------------------------------------------

    def _act(self, action: Action, server: Server | None, reason: str) -> Outcome:
        task = self._store.get(action.task_id)
        if task is None or task.TaskStatus is not TaskStatus.ROLLED_BACK:
            status = task.TaskStatus.name if task else "gone"
            return Outcome(action, False, f"left alone: task {action.task_id} is {status} now")
        try:
            if action.kind == "remove_instance":
                if server is None:
                    return Outcome(action, False, "MySQL is not configured")
                removal = provision.clean(
                    server, name=action.target, task_id=action.task_id,
                    run_key=run_of_owner_key(action.guard), owner_key=action.guard, proof_required=True,
                )  # fmt: skip
                cleaned = removal is not None
                note = _removal_note(removal) if removal else "left alone: the record changed meanwhile"
            elif self._inventory is None:
                return Outcome(action, False, "the inventory is not configured")
            else:
                restored = self._inventory.restore(action.target, self._clock())
                cleaned = restored is not None
                note = f"claim {restored.state.value if restored else 'unknown'}"
        except (pymysql.err.MySQLError, LockBusy, BatonError) as exc:
            return Outcome(action, False, f"failed: {exc}")
        log.warning("reconciled", kind=action.kind, target=action.target, task_id=action.task_id, note=note,
                    why=action.why, reason=reason, actor=self._actor)  # fmt: skip
        if cleaned:
            self._remember(action, f"{note} ({reason}; {action.why})")
        return Outcome(action, cleaned, note)

    def _remember(self, action: Action, message: str) -> None:
        """The task's history says what was removed in its name, why, and who asked."""

        try:
            mutate(self._store, action.task_id,
                   lambda task: noted(task, self._clock(), HISTORY_EVENT, actor=self._actor, message=message))
        except BatonError as exc:  # the removal stands; the log line above says what it was
            log.warning("could not record the reconciliation in the task's history", task_id=action.task_id,
                        error=str(exc))  # fmt: skip

    @contextlib.contextmanager
    def _server(self) -> Iterator[Server | None]:
        if self._mysql is None:
            yield None
            return
        server = Server.connect(self._mysql)
        try:
            yield server
        finally:
            server.close()


def _facts(task: Task) -> TaskFacts:
    instance = task.Parameters.get("instance") if task.TaskStatus is TaskStatus.SUCCESS else None
    name = instance.get("database") if isinstance(instance, dict) else None
    return TaskFacts(task.TaskId, task.TaskStatus, name if isinstance(name, str) else None)


def _record(row: OwnedInstance, found: provision.Presence) -> InstanceRecord:
    parts = {"database": found.database, "user": found.user}
    return InstanceRecord(
        row.name, row.owner_task, row.owner_key, row.state, found.database, found.user,
        present=frozenset(p for p, state in parts.items() if state != provision.ABSENT),
        proven=frozenset(p for p, state in parts.items() if state == provision.BATONS),
        user_host=row.user_host,
    )  # fmt: skip


def _removal_note(removal: provision.Removal) -> str:
    removed = ", ".join(removal.removed) or "nothing on the server"
    left = f"; left alone: {', '.join(removal.left_alone)}" if removal.left_alone else ""
    return f"removed {removed} and the record{left}"


def _named(task: Task) -> str | None:
    name = task.Parameters.get("name")
    return name if isinstance(name, str) else None


def _dropped_name(task: Task) -> str | None:
    dropped = task.Parameters.get("instance_dropped")
    name = dropped.get("name") if isinstance(dropped, dict) else None
    return name if isinstance(name, str) else None
