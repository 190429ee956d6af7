"""MySQL commands: create, clean up and drop an instance (a database and its user), and change
its connection limit. The work is in provision.py; these map a task's Parameters onto it.

Each command opens its own admin connection (commands are rare and a connection costs a few
milliseconds; a long-lived one would need keep-alive and reconnect logic for nothing).

Kinds (docs/design/runtime.md). Every command that changes an instance holds the instance's
MariaDB lock across its DDL and stays a `process`: PyMySQL waits for a statement's answer with no
bound of its own (a DDL can wait on a metadata lock for as long as a transaction holds it), and
only killing the process stops such a wait at once, closing the session and freeing the lock for
the rollback. The one read, `await_disconnect` (polled every few seconds while clients leave),
runs on a `thread`: no lock, no side effect, and its statements are bounded by
BATON_MYSQL_READ_TIMEOUT_SECONDS, so it cannot hang past its attempt. No command is `async`: the
lock file has no asyncio MariaDB driver, and the lock-holding commands must stay killable anyway.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pymysql

from common.errors import CommandFailed
from common.runtime.demo_commands import add_demo_commands
from common.runtime.registry import CommandContext, CommandRegistry, Verdict
from modules.mysql import provision
from modules.mysql.naming import access_from, connection_limit, given_password, instance_name
from modules.mysql.provision import Placement
from modules.mysql.server import LockBusy, Server
from modules.mysql.settings import MysqlSettings, load_mysql_settings
from modules.mysql.verify import verify_instance

registry = CommandRegistry("mysql")
add_demo_commands(registry)


@dataclass
class MysqlParts:
    settings: MysqlSettings
    placement: Placement
    meta_ready: list[bool] = field(default_factory=lambda: [False])  # per process, set once


@registry.setup
def load_parts() -> MysqlParts:
    """Once per command process. Connects to nothing: a server that is down fails commands (and
    they retry), it does not stop the module from starting."""
    settings = load_mysql_settings()
    secret = settings.password_secret.get_secret_value().encode() if settings.password_secret else None
    placement = Placement(settings.client_host, settings.client_port, settings.user_host, secret)
    return MysqlParts(settings, placement)


@contextlib.contextmanager
def _server(ctx: CommandContext, read_timeout: int | None = None) -> Iterator[Server]:
    parts: MysqlParts = ctx.resources
    try:
        server = Server.connect(parts.settings, read_timeout)
    except pymysql.err.OperationalError as exc:
        address = parts.settings.server()
        raise CommandFailed(f"cannot reach MySQL at {address.host}:{address.port}: {exc.args[-1]}") from None
    try:
        if not parts.meta_ready[0]:
            server.ensure_meta_schema()
            parts.meta_ready[0] = True
        yield server
    except pymysql.err.OperationalError as exc:  # lost connection, lock wait timeout...: retry
        raise CommandFailed(f"MySQL: {exc.args[-1]}") from None
    except LockBusy as exc:
        raise CommandFailed(str(exc)) from None
    finally:
        server.close()


def _name(ctx: CommandContext) -> str:
    parts: MysqlParts = ctx.resources
    return instance_name(ctx.parameters.get("name"), parts.settings.meta_schema)


@registry.command()
def init_instance(ctx: CommandContext) -> dict:
    name = _name(ctx)  # checked before any connection: a refused name touches nothing
    access, password = access_from(ctx.parameters), given_password(ctx.parameters)
    with _server(ctx) as server:
        return provision.init_instance(
            server, ctx.resources.placement, name=name, access=access, password=password,
            task_id=ctx.task_id, key=ctx.idempotency_key, run_key=ctx.run_key, fence=ctx.check_fence,
        )


@registry.verify("init_instance")
def init_instance_done(parameters: dict, ctx: CommandContext) -> Verdict:
    """Did an attempt whose outcome is unknown create the instance? (modules/mysql/verify.py)"""
    try:
        name = instance_name(parameters.get("name"), ctx.resources.settings.meta_schema)
    except CommandFailed as exc:
        return Verdict.not_done(f"init refuses this name: {exc}")
    try:
        with _server(ctx) as server:
            return verify_instance(server, ctx.resources.placement, name=name, key=ctx.idempotency_key,
                                   password=given_password(parameters), before=ctx.phase)
    except CommandFailed as exc:  # the server is out of reach: nobody can tell yet
        return Verdict.unknown(str(exc))


@registry.command()
def clean_instance(ctx: CommandContext) -> dict:
    try:
        name = _name(ctx)
    except CommandFailed:
        return {"instance_cleaned": False}  # init refused this name: it created nothing
    with _server(ctx) as server:
        return provision.clean_instance(server, name=name, task_id=ctx.task_id, run_key=ctx.run_key)


# A read on a thread: no process forked for each check. Its statements time out (a thread cannot
# be killed), so a server that stops answering fails the attempt, which retries.
@registry.command(kind="thread")
def await_disconnect(ctx: CommandContext) -> dict:
    """Before a drop: wait (checking again later, no slot held) until the instance's clients left."""
    name, force = _name(ctx), ctx.parameters.get("force") is True
    with _server(ctx, read_timeout=ctx.resources.settings.read_timeout_seconds) as server:
        return provision.await_disconnect(server, name=name, force=force,
                                          check_every=ctx.resources.settings.disconnect_check_seconds)


@registry.command()
def drop_instance(ctx: CommandContext) -> dict:
    name = _name(ctx)
    with _server(ctx) as server:
        return provision.drop_instance(server, name=name, user_host=ctx.resources.placement.user_host)


@registry.command()
def set_connection_limit(ctx: CommandContext) -> dict:
    name, limit = _name(ctx), connection_limit(ctx.parameters.get("max_connections"))
    with _server(ctx) as server:
        # One change per run of the task: its rollback (another step phase, another idempotency
        # key) finds it; an operator's restart (a new run) makes a new one.
        return provision.set_connection_limit(
            server, name=name, limit=limit, change_key=ctx.run_key, fence=ctx.check_fence
        )


@registry.command()
def restore_connection_limit(ctx: CommandContext) -> dict:
    try:
        name = _name(ctx)
    except CommandFailed:
        return {"connection_limit_restored": False}  # the change refused this name: it changed nothing
    with _server(ctx) as server:
        return provision.restore_connection_limit(server, name=name, change_key=ctx.run_key)


# --- create_mysql_cluster: replicas (one run per item of a for_each step) and the topology -------


@registry.command()
def init_replica(ctx: CommandContext) -> dict:
    """One replica instance, named by this run's item; read-only access. Its ownership key is
    the item's idempotency key, so each item creates (and its rollback removes) its own."""
    name = instance_name(ctx.item, ctx.resources.settings.meta_schema)
    with _server(ctx) as server:
        created = provision.init_instance(
            server, ctx.resources.placement, name=name, access="read_only", password=None,
            task_id=ctx.task_id, key=ctx.idempotency_key, run_key=_item_run(ctx), fence=ctx.check_fence,
        )
    return {"replica": created["instance"]}


def _item_run(ctx: CommandContext) -> str:
    """The tombstone key of one item: its rollback fences a late init of that item only."""
    return f"{ctx.run_key}:item{ctx.item_index}"


@registry.command()
def clean_replica(ctx: CommandContext) -> dict:
    try:
        name = instance_name(ctx.item, ctx.resources.settings.meta_schema)
    except CommandFailed:
        return {"instance_cleaned": False}  # init refused this name: it created nothing
    with _server(ctx) as server:
        return provision.clean_instance(server, name=name, task_id=ctx.task_id, run_key=_item_run(ctx))


@registry.command()
def record_topology(ctx: CommandContext) -> dict:
    """The join: records which instance is the primary and which are its replicas."""
    cluster = _name(ctx)
    primary = (ctx.parameters.get("primary") or {}).get("instance") or {}
    replicas = [r.get("replica", {}) for r in ctx.parameters.get("add_replicas") or []]
    topology = {
        "cluster": cluster,
        "primary": {k: primary.get(k) for k in ("host", "port", "database")},
        "replicas": [{k: r.get(k) for k in ("host", "port", "database")} for r in replicas],
    }
    with _server(ctx) as server, server.instance_lock(cluster):  # the lock forget_topology takes
        ctx.check_fence()
        owner = server.record_topology(cluster, ctx.task_id, json.dumps(topology, sort_keys=True), time.time())
    if owner != ctx.task_id:
        raise CommandFailed(f"cluster {cluster} is recorded already (by task {owner})", retryable=False)
    return {"topology": topology}


@registry.command()
def forget_topology(ctx: CommandContext) -> dict:
    cluster = _name(ctx)
    with _server(ctx) as server, server.instance_lock(cluster):
        return {"topology_forgotten": server.forget_topology(cluster, ctx.task_id)}
