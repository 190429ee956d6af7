"""The reconciler's I/O: read what the modules' records and the store say, plan (oss/reconcile_rules,
pure), and, when asked, carry the plan out. `baton reconcile` and the sweeper's periodic job
(BATON_RECONCILE_INTERVAL_SECONDS) both use it.

Acting re-checks at the last moment what the plan relied on: the task is still ROLLED_BACK (an
operator may have restarted it since), the ownership row still has the owner key it had (a new
run's instance is never touched), under the instance's lock (the same removal as the task's own
rollback, tombstone included).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pymysql
import structlog

from common.errors import BatonError
from common.engine.document import Task
from common.engine.states import TaskStatus
from common.store.inventory_port import Inventory
from common.store.port import TaskStore
from common.store.task_filters import page_key
from modules.mysql import provision
from modules.mysql.server import LockBusy, Server
from modules.mysql.settings import MysqlSettings
from oss.reconcile_rules import (
    Action,
    InstanceRecord,
    Plan,
    ReservationRecord,
    TaskFacts,
    plan,
    run_of_owner_key,
    task_of_claim,
)

log = structlog.get_logger(__name__)
PAGE = 500


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
    ):
        self._store = store
        self._inventory = inventory
        self._mysql = mysql
        self._clock = clock

    def survey(self) -> Survey:
        problems: list[str] = []
        instances = self._instances(problems)
        reservations = self._reservations(problems)
        owner_ids = {row.owner_task for row in instances}
        owner_ids |= {t for t in (task_of_claim(c.key) for c in reservations) if t is not None}
        owners = {tid: _facts(task) for tid in sorted(owner_ids) if (task := self._store.get(tid)) is not None}
        successes = list(self._successes())
        dropped = [name for task in successes if (name := _dropped_name(task))]
        facts = [_facts(task) for task in successes]
        return Survey(plan(instances, reservations, owners, [f for f in facts if f.instance], dropped), problems)

    def apply(self, actions: list[Action]) -> list[Outcome]:
        if not any(a.kind == "remove_instance" for a in actions):
            return [self._act(action, None) for action in actions]
        try:
            with self._server() as server:
                return [self._act(action, server) for action in actions]
        except pymysql.err.MySQLError as exc:  # could not connect: nothing was done
            return [Outcome(action, False, f"failed: MySQL: {exc}") for action in actions]

    # --- reading -------------------------------------------------------------------------------

    def _instances(self, problems: list[str]) -> list[InstanceRecord]:
        if self._mysql is None:
            return []
        try:
            with self._server() as server:
                if server is None or not server.meta_exists():
                    return []
                return [InstanceRecord(r.name, r.owner_task, r.owner_key, r.state) for r in server.all_owned()]
        except (pymysql.err.MySQLError, BatonError) as exc:
            problems.append(f"MySQL: {exc}")
            return []

    def _reservations(self, problems: list[str]) -> list[ReservationRecord]:
        if self._inventory is None:
            return []
        try:
            claims = self._inventory.list_claims(self._clock(), live_only=True)
        except BatonError as exc:
            problems.append(f"inventory: {exc}")
            return []
        return [ReservationRecord(c.key, c.holder, c.host, c.state.value) for c in claims]

    def _successes(self) -> Iterator[Task]:
        after = None
        while True:
            page = self._store.list_tasks(status=TaskStatus.SUCCESS, after=after, limit=PAGE)
            yield from page
            if len(page) < PAGE:
                return
            after = page_key(page[-1])

    # --- acting --------------------------------------------------------------------------------

    def _act(self, action: Action, server: Server | None) -> Outcome:
        task = self._store.get(action.task_id)
        if task is None or task.TaskStatus is not TaskStatus.ROLLED_BACK:
            status = task.TaskStatus.name if task else "gone"
            return Outcome(action, False, f"left alone: task {action.task_id} is {status} now")
        try:
            if action.kind == "remove_instance":
                if server is None:
                    return Outcome(action, False, "MySQL is not configured")
                cleaned = provision.clean_instance(
                    server, name=action.target, task_id=action.task_id,
                    run_key=run_of_owner_key(action.guard), owner_key=action.guard,
                )["instance_cleaned"]  # fmt: skip
                note = "database, user and record removed" if cleaned else "left alone: the record changed meanwhile"
            elif self._inventory is None:
                return Outcome(action, False, "the inventory is not configured")
            else:
                restored = self._inventory.restore(action.target, self._clock())
                cleaned = restored is not None
                note = f"claim {restored.state.value if restored else 'unknown'}"
        except (pymysql.err.MySQLError, LockBusy, BatonError) as exc:
            return Outcome(action, False, f"failed: {exc}")
        log.warning("reconciled", kind=action.kind, target=action.target, task_id=action.task_id, note=note)
        return Outcome(action, cleaned, note)

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


def _dropped_name(task: Task) -> str | None:
    dropped = task.Parameters.get("instance_dropped")
    name = dropped.get("name") if isinstance(dropped, dict) else None
    return name if isinstance(name, str) else None
