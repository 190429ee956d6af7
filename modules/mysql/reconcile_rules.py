"""What the reconciler should do, decided from records alone: pure, no I/O (modules/mysql/reconcile.py reads
the records and carries the actions out).

The modules' own records say what belongs to which task: the mysql module's ownership table
(a database and its user per row, with the owner task and the idempotency key of the init that
created it) and the resource inventory's live claims (keyed `task:<run key>`). Compared with the
tasks' states:

- a record of a task that ended ROLLED_BACK is a leak (a command that outlived its claim, or a
  rollback that ran before the fences existed): remove what of it carries baton's mark, and the
  record. What stands under that name without the mark (created by hand after the task rolled
  back, or unproven) is reported and left alone; the report says what exists on the server, not
  what the record claims;
- a SUCCESS task whose database, user or record is missing on the server is reported, never
  "fixed" (someone dropped it by hand, or the record was lost: a person must look), unless a
  delete dropped it or a task naming it has not finished yet; with the server unreadable nothing
  is reported (the I/O layer says it could not check);
- everything else is left alone. Above all, a record of a task that succeeded, is still running
  or failed its rollback (an operator's case) is never touched, and neither is a record whose
  task the store does not know.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from common.engine.states import TaskStatus

CLAIM_PREFIX = "task:"  # modules.resource.requests.claim_key


@dataclass(frozen=True)
class InstanceRecord:
    """A row of the mysql module's ownership table."""

    name: str
    owner_task: str
    owner_key: str  # the idempotency key of the init step that created it: "<run key>:<step>:normal"
    state: str
    # What stands on the server under the name, as the I/O layer found it (provision.presence):
    # each part ("database", "user") described, which of them exist, which carry baton's mark.
    database: str = "absent"
    user: str = "absent"
    present: frozenset[str] = frozenset()
    proven: frozenset[str] = frozenset()
    user_host: str = "%"

    def on_server(self) -> str:
        return f"database {self.name} {self.database}, user {self.name} {self.user}"

    def unproven(self) -> list[tuple[str, str]]:
        """(part, description) of what exists without baton's mark."""
        described = {"database": self.database, "user": self.user}
        return [(part, described[part]) for part in ("database", "user") if part in self.present - self.proven]


@dataclass(frozen=True)
class ReservationRecord:
    """A live claim (reserved or deducted) of the resource inventory."""

    key: str
    holder: str
    host: str
    state: str


@dataclass(frozen=True)
class TaskFacts:
    task_id: str
    status: TaskStatus
    instance: str | None = None  # SUCCESS tasks: the database its init created (Parameters.instance)


@dataclass(frozen=True)
class ServerView:
    """The databases and users on the server when the survey read it."""

    databases: frozenset[str]
    users: frozenset[tuple[str, str]]
    user_host: str  # the host pattern users are created with (when no record names it)


@dataclass(frozen=True)
class Action:
    kind: str  # "remove_instance" | "restore_reservation"
    target: str  # the instance name, or the claim key
    task_id: str
    guard: str  # what must still hold when acting: the row's owner_key, the claim's key
    why: str


@dataclass(frozen=True)
class Finding:
    kind: str  # "instance_missing" | "not_created_by_baton" | "owner_unknown" | "owner_rollback_failed"
    target: str
    task_id: str
    why: str


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def task_of_claim(key: str) -> str | None:
    """The task a claim key names ("task:<task id>" or "task:<task id>:g<generation>"); None for
    a claim some other tool made (not ours to judge)."""
    if not key.startswith(CLAIM_PREFIX):
        return None
    run_key = key[len(CLAIM_PREFIX):]
    task_id, _, generation = run_key.partition(":g")
    return task_id if task_id and (not generation or (generation.isascii() and generation.isdigit())) else None


def run_of_owner_key(owner_key: str) -> str:
    """"<run key>:<step>:normal" -> "<run key>" (the tombstone the removal leaves is keyed by it)."""
    return owner_key.rsplit(":", 2)[0]


def plan(
    instances: Iterable[InstanceRecord],
    reservations: Iterable[ReservationRecord],
    owners: Mapping[str, TaskFacts],
    successes: Iterable[TaskFacts],
    dropped: Iterable[str] = (),
    server: ServerView | None = None,
    in_flight: Iterable[str] = (),
) -> Plan:
    """`owners`: the facts of every task a record names (missing: the store does not know it).
    `successes`: SUCCESS tasks that created an instance, checked against `server` (None: it could
    not be read, nothing is reported). `dropped`: instance names a successful delete task dropped
    (gone on purpose); `in_flight`: names an unfinished task works on (a delete may be dropping)."""
    result = Plan()
    instances = list(instances)
    for row in instances:
        _judge(result, "remove_instance", row.name, row.owner_task, row.owner_key, owners, _instance_what(row))
        if owners.get(row.owner_task, TaskFacts("", TaskStatus.RUNNING)).status is TaskStatus.ROLLED_BACK:
            for part, state in row.unproven():
                result.findings.append(Finding(
                    "not_created_by_baton", row.name, row.owner_task,
                    f"{part} {row.name} exists but is {state}: it is left alone (the record of rolled-back "
                    f"task {row.owner_task} does not make it baton's)",
                ))  # fmt: skip
    for claim in reservations:
        task_id = task_of_claim(claim.key)
        if task_id is not None:
            _judge(result, "restore_reservation", claim.key, task_id, claim.key, owners,
                   f"{claim.state} claim on {claim.host} for {claim.holder}")  # fmt: skip
    if server is None:
        return result
    records = {row.name: row for row in instances}
    skip = set(dropped) | set(in_flight)
    for task in successes:
        if not task.instance or task.instance in skip:
            continue
        missing = _missing(task, records.get(task.instance), server)
        if missing:
            result.findings.append(Finding(
                "instance_missing", task.instance, task.task_id,
                f"task {task.task_id} succeeded but its instance {task.instance} is damaged: {', '.join(missing)}",
            ))  # fmt: skip
    return result


def _instance_what(row: InstanceRecord) -> str:
    nothing = "" if row.proven else "; nothing of baton's to drop"
    return f"the record of {row.name} (on the server: {row.on_server()}{nothing})"


def _missing(task: TaskFacts, row: InstanceRecord | None, server: ServerView) -> list[str]:
    name = task.instance
    assert name is not None
    missing = []
    if name not in server.databases:
        missing.append(f"database {name} does not exist")
    if (name, row.user_host if row else server.user_host) not in server.users:
        missing.append(f"user {name} does not exist")
    if row is None or row.owner_task != task.task_id:
        missing.append("baton's record of it is gone")
    return missing


def _judge(result: Plan, kind: str, target: str, task_id: str, guard: str,
           owners: Mapping[str, TaskFacts], what: str) -> None:  # fmt: skip
    task = owners.get(task_id)
    if task is None:
        result.findings.append(Finding("owner_unknown", target, task_id, f"{what}: the store has no task {task_id}"))
    elif task.status is TaskStatus.ROLLED_BACK:
        result.actions.append(Action(kind, target, task_id, guard, f"{what} belongs to rolled-back task {task_id}"))
    elif task.status is TaskStatus.ROLLBACK_FAILED:
        result.findings.append(Finding("owner_rollback_failed", target, task_id,
                                       f"{what}: task {task_id} failed its rollback; an operator decides"))  # fmt: skip
