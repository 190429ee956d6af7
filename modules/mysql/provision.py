"""Creating and removing an instance (a database and its user) so that every step can be re-run.

Ownership: before creating anything, init records the name in baton's ownership table
(`<meta_schema>.instances`) with the task and step that create it. Only a name that neither
exists on the server nor is recorded may be taken, so a row of ours always means "this task
created (or was about to create) that database and user": clean_instance removes exactly those,
and a database or user baton did not create is never touched.

Proof of creation: a row alone does not prove what stands on the server (a task may have rolled
back before creating anything, and someone may then create that name by hand). So the row holds
a random mark; the database baton creates carries it in its comment, and once baton created the
user, the row holds a fingerprint of the user's credentials salted with the mark. A removal drops
only what still carries the proof (presence()); the rest is left alone and said so. A row written
before marks existed proves nothing: the task's own rollback and delete trust it as they always
did, the reconciler never does.

Crash safety: each step is a statement that is harmless to repeat (IF NOT EXISTS / IF EXISTS,
INSERT IGNORE), so a re-run after a crash anywhere finishes the work. The password is derived
from a key and the step's idempotency key, so the re-run recreates nothing and reports the same
password. A database of the same name that someone creates between our check and our CREATE
lacks the mark: init refuses it. Known window: a crash between recording that the user is about
to be created and recording its fingerprint leaves a user a re-run of the same step adopts, and
that no removal drops until then (it is reported, never dropped unproven).

Fencing (common/engine/core/fence.py): a command can outlive its claim (its replica froze past the lease) and
resume after the task was rolled back. So every change to an instance runs under the instance's
lock (Server.instance_lock), which clean_instance takes as well; clean_instance leaves a tombstone
for the task's run before it removes anything; and init_instance, holding the lock, refuses a run
with a tombstone or a stale fencing token. A late init therefore either finished its creation
before the clean took the lock (and the clean removes it), or finds the tombstone, or had its
session killed by the clean while it held the lock: it never re-creates what a rollback removed.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from common.engine.commands import check_again
from common.errors import CommandFailed
from modules.mysql.naming import ACCESS_PRIVILEGES, derive_password
from modules.mysql.server import MARK_PREFIX, PENDING_USER, LimitChange, OwnedInstance, Server

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Placement:
    """Where clients reach the server, and how created users may connect."""

    client_host: str
    client_port: int
    user_host: str
    password_secret: bytes | None  # None: use the server's own key (Server.password_key)


Fence = Callable[[], None]  # raises (StaleFence) when the command's step is no longer current


def _no_fence() -> None:
    """Tools and tests that act outside a task's step: only the tombstones fence them."""


def init_instance(
    server: Server,
    place: Placement,
    *,
    name: str,
    access: str,
    password: str | None,
    task_id: str,
    key: str,
    run_key: str | None = None,
    fence: Fence = _no_fence,
) -> dict[str, Any]:
    with server.instance_lock(name):
        if server.has_tombstone(run_key or task_id):
            raise CommandFailed(
                f"instance {name} of this run was cleaned by its rollback; refusing to create it again",
                retryable=False,
            )
        fence()
        return _create(server, place, name=name, access=access, password=password, task_id=task_id, key=key)


def _create(
    server: Server, place: Placement, *, name: str, access: str, password: str | None, task_id: str, key: str
) -> dict[str, Any]:
    now = time.time()
    row = server.owned(name)
    if row is None:
        _refuse_foreign(server, name, place.user_host)
        wanted = OwnedInstance(name, place.user_host, task_id, key, access, "creating", now, secrets.token_hex(16))
        server.claim_ownership(wanted, now)
        row = server.owned(name)  # ours, or a concurrent creator's that won the insert
        assert row is not None
    if row.owner_key != key:
        raise CommandFailed(f"instance {name} exists already (created by task {row.owner_task})", retryable=False)
    if row.state == "dropping":
        raise CommandFailed(f"instance {name} is being dropped", retryable=False)
    ready_already = row.state == "ready"  # an earlier attempt (a replica since thawed, a retry) finished it
    secret = place.password_secret or server.password_key()
    password = password or derive_password(secret, key)
    _create_database(server, row)
    _create_user(server, row, password)
    server.grant(name, name, row.user_host, ACCESS_PRIVILEGES[row.access])
    if row.state != "ready":
        server.set_state(name, "ready", time.time())
    # Said as it is: a re-run (its work checked and found done) created nothing.
    log.info("instance ready already; nothing created" if ready_already else "instance created",
             instance=name, access=row.access)
    return instance_output(place, row, password)


def instance_output(place: Placement, row: OwnedInstance, password: str) -> dict[str, Any]:
    """What init_instance answers (and its verify, finding it done): how clients reach it."""
    return {
        "instance": {
            "host": place.client_host,
            "port": place.client_port,
            "database": row.name,
            "user": row.name,
            "password": password,  # masked in logs and API answers (common.secrets.documents.mask_secrets)
            "access": row.access,
        }
    }


def clean_instance(
    server: Server, *, name: str, task_id: str, run_key: str | None = None, owner_key: str | None = None
) -> dict[str, Any]:
    """Undo init_instance of THIS task: nothing happens to an instance another task created
    (nor, given `owner_key`, to one another run of this task created: the reconciler's guard)."""
    removal = clean(server, name=name, task_id=task_id, run_key=run_key, owner_key=owner_key)
    return {"instance_cleaned": removal is not None, **(removal.output() if removal else {})}


def clean(
    server: Server, *, name: str, task_id: str, run_key: str | None = None, owner_key: str | None = None,
    proof_required: bool = False,
) -> Removal | None:
    """clean_instance's work: what it removed and left alone, None when the row is not this
    task's (run's). `proof_required` (the reconciler): a row without marks proves nothing, so
    nothing is dropped but the row.

    The tombstone comes first, before the lock: an init of this run that takes the lock after
    it (a late or frozen one) refuses to create anything."""
    server.leave_tombstone(run_key or task_id, name, task_id, time.time())
    with server.instance_lock(name):
        row = server.owned(name)
        if row is None or row.owner_task != task_id or (owner_key is not None and row.owner_key != owner_key):
            return None
        removal = _remove(server, row, proof_required)
    log.info("instance cleaned", instance=name, removed=removal.removed, left_alone=removal.left_alone)
    return removal


def await_disconnect(server: Server, *, name: str, force: bool, check_every: float) -> dict[str, Any]:
    """Done once the instance's clients have disconnected (or at once with `force`: the drop then
    ends their sessions); until then "check again later", so the delete holds no worker while it
    waits. An instance baton does not own has nothing to wait for: the drop step judges it."""
    if force or server.owned(name) is None:
        return {"disconnected": {"name": name, "forced": force}}
    open_sessions = server.session_count(name)
    if open_sessions:
        return check_again(check_every, f"{open_sessions} session{'s' if open_sessions > 1 else ''} of {name} still open")
    return {"disconnected": {"name": name, "forced": False}}


def drop_instance(server: Server, *, name: str, user_host: str) -> dict[str, Any]:
    with server.instance_lock(name):
        return _drop(server, name=name, user_host=user_host)


def _drop(server: Server, *, name: str, user_host: str) -> dict[str, Any]:
    row = server.owned(name)
    if row is None:
        if server.database_exists(name) or server.user_exists(name, user_host):
            raise CommandFailed(f"{name} was not created by baton; refusing to drop it", retryable=False)
        return {"instance_dropped": {"name": name, "existed": False}}  # gone already: done
    removal = _remove(server, row, proof_required=False)
    log.info("instance dropped", instance=name, removed=removal.removed, left_alone=removal.left_alone)
    return {"instance_dropped": {"name": name, "existed": True}, **removal.output()}


def set_connection_limit(
    server: Server, *, name: str, limit: int, change_key: str, fence: Fence = _no_fence
) -> dict[str, Any]:
    """Record the limit in force BEFORE changing it, so the rollback (even of a re-run) restores it.

    The record is also this change's tombstone: once its rollback marked it restored, a late
    attempt of the change (a frozen replica resuming) refuses instead of applying it again."""
    with server.instance_lock(name):
        fence()
        return _set_limit(server, name=name, limit=limit, change_key=change_key)


def _set_limit(server: Server, *, name: str, limit: int, change_key: str) -> dict[str, Any]:
    row = _ready(server, name)
    change = server.limit_change(change_key)
    if change is not None and change.state == "restored":
        raise CommandFailed(f"the connection limit change on {name} was rolled back; refusing to apply it again",
                            retryable=False)
    if change is None:
        previous = server.user_connection_limit(name, row.user_host)
        if previous is None:
            raise CommandFailed(f"user {name}@{row.user_host} is missing; the instance is damaged", retryable=False)
        server.record_limit_change(LimitChange(change_key, name, previous, limit, "applied"), time.time())
        change = server.limit_change(change_key)
        assert change is not None
    server.set_user_connection_limit(name, row.user_host, change.requested)
    return {"connection_limit": {"name": name, "max_connections": change.requested, "previous": change.previous}}


def restore_connection_limit(server: Server, *, name: str, change_key: str) -> dict[str, Any]:
    with server.instance_lock(name):
        return _restore_limit(server, change_key=change_key)


def _restore_limit(server: Server, *, change_key: str) -> dict[str, Any]:
    change = server.limit_change(change_key)
    if change is None:
        return {"connection_limit_restored": False}  # the change never started: nothing to undo
    row = server.owned(change.name)
    if row is not None and server.user_exists(change.name, row.user_host):
        server.set_user_connection_limit(change.name, row.user_host, change.previous)
    server.set_limit_change_state(change_key, "restored", time.time())
    return {"connection_limit_restored": True, "connection_limit": {"name": change.name, "max_connections": change.previous}}


# --- the parts -------------------------------------------------------------------------------------


def _refuse_foreign(server: Server, name: str, user_host: str) -> None:
    if server.database_exists(name):
        raise CommandFailed(f"database {name} exists already and was not created by baton", retryable=False)
    if server.user_exists(name, user_host):
        raise CommandFailed(f"user {name}@{user_host} exists already and was not created by baton", retryable=False)


def _ready(server: Server, name: str) -> OwnedInstance:
    row = server.owned(name)
    if row is None or row.state != "ready":
        raise CommandFailed(f"no ready instance {name} created by baton", retryable=False)
    return row


def _create_database(server: Server, row: OwnedInstance) -> None:
    server.create_database(row.name, row.mark)
    if row.mark is not None and server.database_comment(row.name) != MARK_PREFIX + row.mark:
        raise CommandFailed(f"database {row.name} exists already and was not created by baton", retryable=False)


def _create_user(server: Server, row: OwnedInstance, password: str) -> None:
    """The intent is recorded before CREATE USER, the fingerprint after: a user standing before
    the intent is someone else's, one whose fingerprint changed was replaced by someone."""
    if row.mark is None:  # a row from before the marks: as it always was
        server.create_user(row.name, row.user_host, password)
        return
    current = server.user_fingerprint(row.name, row.user_host, row.mark)
    if row.user_mark is None:
        if current is not None:
            raise CommandFailed(f"user {row.name}@{row.user_host} exists already and was not created by baton",
                                retryable=False)  # fmt: skip
        server.set_user_mark(row.name, PENDING_USER, time.time())
    elif row.user_mark not in (PENDING_USER, current) and current is not None:
        raise CommandFailed(f"user {row.name}@{row.user_host} was replaced by one baton did not create",
                            retryable=False)  # fmt: skip
    server.create_user(row.name, row.user_host, password)
    created = server.user_fingerprint(row.name, row.user_host, row.mark)
    if created is not None and created != row.user_mark:
        server.set_user_mark(row.name, created, time.time())


# What stands on the server under an ownership row's name (Presence's values).
ABSENT, BATONS, NOT_BATONS, UNPROVEN = "absent", "created by baton", "not created by baton", "not proven baton's"


@dataclass(frozen=True)
class Presence:
    database: str
    user: str

    def removable(self, trust_unproven: bool) -> tuple[bool, bool]:
        """(drop the database?, drop the user?)"""
        allowed = {BATONS, UNPROVEN} if trust_unproven else {BATONS}
        return self.database in allowed, self.user in allowed


def presence(server: Server, row: OwnedInstance) -> Presence:
    comment = server.database_comment(row.name)
    if comment is None:
        database = ABSENT
    elif row.mark is None:
        database = UNPROVEN
    else:
        database = BATONS if comment == MARK_PREFIX + row.mark else NOT_BATONS
    if row.mark is None:
        user = UNPROVEN if server.user_exists(row.name, row.user_host) else ABSENT
        return Presence(database, user)
    fingerprint = server.user_fingerprint(row.name, row.user_host, row.mark)
    if fingerprint is None:
        user = ABSENT
    elif row.user_mark == PENDING_USER:
        user = UNPROVEN
    else:
        user = BATONS if fingerprint == row.user_mark else NOT_BATONS
    return Presence(database, user)


@dataclass(frozen=True)
class Removal:
    removed: list[str]
    left_alone: list[str]  # "database x (not created by baton)"

    def output(self) -> dict[str, Any]:
        return {"instance_left_alone": self.left_alone} if self.left_alone else {}


def _remove(server: Server, row: OwnedInstance, proof_required: bool) -> Removal:
    """User first (no new sessions), its sessions, then the data, and the record last: a crash
    anywhere leaves the record, so a re-run finishes the removal. Only what carries baton's
    mark is dropped (a row without marks is trusted unless `proof_required`)."""
    found = presence(server, row)
    drop_database, drop_user = found.removable(trust_unproven=not proof_required)
    server.set_state(row.name, "dropping", time.time())
    removed, left = [], []
    if drop_user:
        server.drop_user(row.name, row.user_host)
        server.kill_sessions(row.name)
        removed.append(f"user {row.name}")
    elif found.user != ABSENT:
        left.append(f"user {row.name} ({found.user})")
    if drop_database:
        server.drop_database(row.name)
        removed.append(f"database {row.name}")
    elif found.database != ABSENT:
        left.append(f"database {row.name} ({found.database})")
    if left:
        log.warning("left alone what baton cannot prove it created", instance=row.name, left_alone=left)
    server.forget(row.name)
    return Removal(removed, left)
