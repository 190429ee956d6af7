"""The statements baton runs on a MySQL/MariaDB server, one method each: the only I/O of the module.

Every identifier in here passed naming.instance_name (or is baton's meta schema, checked at start)
and is quoted by naming.quote_identifier / grant_database; every value (user names, host patterns,
passwords, limits) is a bound parameter. DDL commits on its own in MySQL, so the connection is in
autocommit mode and each method is one step that is safe to repeat.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql
import structlog

from modules.mysql.naming import grant_database, quote_identifier
from modules.mysql.settings import MysqlSettings

_SECRET_NAME = "password_key"
_ROW = "name, user_host, owner_task, owner_key, access, state, created_at, mark, user_mark"
PENDING_USER = "pending"
MARK_PREFIX = "baton:"  # a database's comment: "baton:<the ownership row's mark>"
log = structlog.get_logger(__name__)


class LockBusy(Exception):
    """The instance's lock could not be taken, even after ending its holder's session."""


@dataclass(frozen=True)
class OwnedInstance:
    """A row of baton's ownership table: baton created this database and user, for this task."""

    name: str
    user_host: str
    owner_task: str
    owner_key: str
    access: str
    state: str  # creating | ready | dropping
    created_at: float
    # The proof that what stands on the server is what baton created (provision.presence): the
    # database carries `mark` in its comment; `user_mark` fingerprints the user baton created
    # (PENDING_USER: recorded before CREATE USER, not proven yet). None: a row written before
    # marks existed.
    mark: str | None = None
    user_mark: str | None = None


@dataclass(frozen=True)
class LimitChange:
    change_key: str
    name: str
    previous: int
    requested: int
    state: str  # applied | restored


class Server:
    def __init__(self, conn: Any, meta_schema: str, lock_wait: int = 10):
        self._conn = conn
        self._meta_name = meta_schema
        self._meta = quote_identifier(meta_schema)
        self._lock_wait = lock_wait

    @classmethod
    def connect(cls, settings: MysqlSettings, read_timeout: int | None = None) -> Server:
        """`read_timeout`: seconds a statement may wait for its answer (None: no bound, for the
        commands of a process, which a timeout kills)."""
        address = settings.server()
        conn = pymysql.connect(
            host=address.host,
            port=address.port,
            user=address.user,
            password=address.password or "",
            unix_socket=address.unix_socket,
            autocommit=True,
            charset="utf8mb4",
            connect_timeout=settings.connect_timeout_seconds,
            read_timeout=read_timeout,
            write_timeout=read_timeout,
        )
        return cls(conn, settings.meta_schema, settings.lock_wait_seconds)

    def close(self) -> None:
        self._conn.close()

    # --- baton's own schema --------------------------------------------------------------------

    def ensure_meta_schema(self) -> None:
        self._run(f"CREATE DATABASE IF NOT EXISTS {self._meta} CHARACTER SET utf8mb4")
        self._run(
            f"""CREATE TABLE IF NOT EXISTS {self._meta}.instances (
                name VARCHAR(64) NOT NULL PRIMARY KEY,
                user_host VARCHAR(255) NOT NULL,
                owner_task VARCHAR(128) NOT NULL,
                owner_key VARCHAR(255) NOT NULL,
                access VARCHAR(16) NOT NULL,
                state VARCHAR(16) NOT NULL,
                created_at DOUBLE NOT NULL,
                updated_at DOUBLE NOT NULL,
                mark VARCHAR(64) NULL,
                user_mark VARCHAR(64) NULL
            ) ENGINE=InnoDB"""
        )
        for column in ("mark", "user_mark"):  # a table made before the marks existed
            if self._one(
                "SELECT 1 FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'instances' "
                "AND COLUMN_NAME = %s", (self._meta_name, column),
            ) is None:  # fmt: skip
                self._run(f"ALTER TABLE {self._meta}.instances ADD COLUMN {column} VARCHAR(64) NULL")
        self._run(
            f"""CREATE TABLE IF NOT EXISTS {self._meta}.limit_changes (
                change_key VARCHAR(255) NOT NULL PRIMARY KEY,
                name VARCHAR(64) NOT NULL,
                previous INT NOT NULL,
                requested INT NOT NULL,
                state VARCHAR(16) NOT NULL,
                updated_at DOUBLE NOT NULL
            ) ENGINE=InnoDB"""
        )
        # One row per run of a task whose instance was cleaned (rolled back): init refuses that
        # run for good, so a late command of it cannot create what the rollback removed.
        self._run(
            f"""CREATE TABLE IF NOT EXISTS {self._meta}.tombstones (
                run_key VARCHAR(255) NOT NULL PRIMARY KEY,
                name VARCHAR(64) NOT NULL,
                owner_task VARCHAR(128) NOT NULL,
                created_at DOUBLE NOT NULL
            ) ENGINE=InnoDB"""
        )
        self._run(
            f"""CREATE TABLE IF NOT EXISTS {self._meta}.secrets (
                name VARCHAR(64) NOT NULL PRIMARY KEY,
                value VARBINARY(64) NOT NULL
            ) ENGINE=InnoDB"""
        )

    def password_key(self) -> bytes:
        """The server's random key for deriving passwords: created once, by whoever comes first."""
        self._run(
            f"INSERT IGNORE INTO {self._meta}.secrets (name, value) VALUES (%s, %s)",
            (_SECRET_NAME, secrets.token_bytes(32)),
        )
        (value,) = self._one(f"SELECT value FROM {self._meta}.secrets WHERE name = %s", (_SECRET_NAME,))
        return bytes(value)

    def owned(self, name: str) -> OwnedInstance | None:
        row = self._one(f"SELECT {_ROW} FROM {self._meta}.instances WHERE name = %s", (name,))
        return None if row is None else OwnedInstance(*row)

    def claim_ownership(self, row: OwnedInstance, now: float) -> bool:
        """Record the intent to create BEFORE creating. False if the name is taken already."""
        affected = self._run(
            f"INSERT IGNORE INTO {self._meta}.instances "
            "(name, user_host, owner_task, owner_key, access, state, created_at, updated_at, mark, user_mark) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (row.name, row.user_host, row.owner_task, row.owner_key, row.access, row.state, now, now,
             row.mark, row.user_mark),
        )  # fmt: skip
        return affected == 1

    def set_user_mark(self, name: str, user_mark: str, now: float) -> None:
        self._run(f"UPDATE {self._meta}.instances SET user_mark = %s, updated_at = %s WHERE name = %s",
                  (user_mark, now, name))  # fmt: skip

    def set_state(self, name: str, state: str, now: float) -> None:
        self._run(f"UPDATE {self._meta}.instances SET state = %s, updated_at = %s WHERE name = %s", (state, now, name))

    def forget(self, name: str) -> None:
        self._run(f"DELETE FROM {self._meta}.instances WHERE name = %s", (name,))

    def limit_change(self, change_key: str) -> LimitChange | None:
        row = self._one(
            f"SELECT change_key, name, previous, requested, state FROM {self._meta}.limit_changes WHERE change_key = %s",
            (change_key,),
        )
        return None if row is None else LimitChange(*row)

    def record_limit_change(self, change: LimitChange, now: float) -> None:
        self._run(
            f"INSERT IGNORE INTO {self._meta}.limit_changes (change_key, name, previous, requested, state, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (change.change_key, change.name, change.previous, change.requested, change.state, now),
        )

    def set_limit_change_state(self, change_key: str, state: str, now: float) -> None:
        self._run(
            f"UPDATE {self._meta}.limit_changes SET state = %s, updated_at = %s WHERE change_key = %s",
            (state, now, change_key),
        )

    def leave_tombstone(self, run_key: str, name: str, owner_task: str, now: float) -> None:
        self._run(
            f"INSERT IGNORE INTO {self._meta}.tombstones (run_key, name, owner_task, created_at) VALUES (%s, %s, %s, %s)",
            (run_key, name, owner_task, now),
        )

    def has_tombstone(self, run_key: str) -> bool:
        return self._one(f"SELECT 1 FROM {self._meta}.tombstones WHERE run_key = %s", (run_key,)) is not None

    def meta_exists(self) -> bool:
        """Has any command run here yet? (Asking creates nothing, unlike ensure_meta_schema.)"""
        return self._one(
            "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'instances'",
            (self._meta_name,),
        ) is not None

    def all_owned(self) -> list[OwnedInstance]:
        rows = self._all(f"SELECT {_ROW} FROM {self._meta}.instances", ())
        return [OwnedInstance(*row) for row in rows]

    @contextlib.contextmanager
    def instance_lock(self, name: str) -> Iterator[None]:
        """Hold the instance's named lock (GET_LOCK: it survives the implicit commits of DDL).

        Every change to an instance (create, clean, drop, connection limit) runs under it, and a
        change checks its fence under it, so a check and the DDL it allows cannot be separated
        by a rollback. A holder still there after lock_wait seconds is taken for frozen and its
        session is killed: MariaDB then frees the lock, and the frozen command's next statement
        fails. A live command that is merely slow is killed too; its step retries (idempotent).
        """
        lock = self._lock_name(name)
        if not self._get_lock(lock):
            holder = self._one("SELECT IS_USED_LOCK(%s)", (lock,))
            if holder is not None and holder[0] is not None:
                log.warning("instance lock held too long; ending the holder's session", instance=name,
                            session=int(holder[0]), waited=self._lock_wait)
                with contextlib.suppress(pymysql.err.OperationalError, pymysql.err.InternalError):
                    self._run(f"KILL CONNECTION {int(holder[0])}")
            if not self._get_lock(lock):
                raise LockBusy(f"instance {name} is locked by another session")
        try:
            yield
        finally:
            with contextlib.suppress(pymysql.err.Error):
                self._one("SELECT RELEASE_LOCK(%s)", (lock,))

    def _get_lock(self, lock: str) -> bool:
        row = self._one("SELECT GET_LOCK(%s, %s)", (lock, self._lock_wait))
        return row is not None and row[0] == 1

    def _lock_name(self, name: str) -> str:
        # At most 64 characters (MySQL's limit), one per meta schema and instance name.
        digest = hashlib.sha256(f"{self._meta_name}.{name}".encode()).hexdigest()[:40]
        return f"baton_instance_{digest}"

    # --- databases and users -------------------------------------------------------------------

    def database_exists(self, name: str) -> bool:
        return self._one("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (name,)) is not None

    def user_exists(self, user: str, host: str) -> bool:
        return self._one("SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s", (user, host)) is not None

    def database_comment(self, name: str) -> str | None:
        """The database's comment ("" when it has none); None when there is no such database."""
        row = self._one("SELECT SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (name,))
        return None if row is None else str(row[0] or "")

    def user_fingerprint(self, user: str, host: str, mark: str) -> str | None:
        """A digest of the user's credentials salted with the row's mark (the hash itself is never
        kept): it changes when someone drops the user and creates another. None: no such user."""
        row = self._one("SELECT authentication_string FROM mysql.user WHERE User = %s AND Host = %s", (user, host))
        if row is None:
            return None
        credentials = row[0].encode() if isinstance(row[0], str) else bytes(row[0] or b"")
        return hashlib.sha256(mark.encode() + b":" + credentials).hexdigest()

    def all_databases(self) -> set[str]:
        return {str(name) for (name,) in self._all("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA", ())}

    def all_users(self) -> set[tuple[str, str]]:
        return {(str(user), str(host)) for user, host in self._all("SELECT User, Host FROM mysql.user", ())}

    def create_database(self, name: str, mark: str | None = None) -> None:
        """IF NOT EXISTS: a database that stood already keeps its own comment, so its missing mark
        tells it apart from the one baton created."""
        comment = " COMMENT %s" if mark is not None else ""
        self._run(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(name)} CHARACTER SET utf8mb4{comment}",
                  (MARK_PREFIX + mark,) if mark is not None else None)  # fmt: skip

    def create_user(self, user: str, host: str, password: str) -> None:
        self._run("CREATE USER IF NOT EXISTS %s@%s IDENTIFIED BY %s", (user, host, password))

    def grant(self, database: str, user: str, host: str, privileges: Sequence[str]) -> None:
        # Privilege names come from naming.ACCESS_PRIVILEGES, never from a request. An escaped
        # wildcard's "%" is doubled: with parameters bound, the driver reads "%" as a placeholder.
        target = grant_database(database).replace("%", "%%")
        self._run(f"GRANT {', '.join(privileges)} ON {target}.* TO %s@%s", (user, host))

    def drop_user(self, user: str, host: str) -> None:
        self._run("DROP USER IF EXISTS %s@%s", (user, host))

    def drop_database(self, name: str) -> None:
        self._run(f"DROP DATABASE IF EXISTS {quote_identifier(name)}")

    def session_count(self, user: str) -> int:
        row = self._one("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s", (user,))
        return int(row[0]) if row else 0

    def kill_sessions(self, user: str) -> int:
        """End the user's open sessions: a dropped user's sessions otherwise live on."""
        ids = self._all("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s", (user,))
        killed = 0
        for (session_id,) in ids:
            try:
                self._run(f"KILL CONNECTION {int(session_id)}")
                killed += 1
            except pymysql.err.OperationalError:
                pass  # it ended by itself meanwhile (unknown thread id)
        return killed

    def user_connection_limit(self, user: str, host: str) -> int | None:
        row = self._one("SELECT max_user_connections FROM mysql.user WHERE User = %s AND Host = %s", (user, host))
        return None if row is None else int(row[0])

    def set_user_connection_limit(self, user: str, host: str, limit: int) -> None:
        self._run(f"ALTER USER %s@%s WITH MAX_USER_CONNECTIONS {int(limit)}", (user, host))

    # --- cluster topologies (create_mysql_cluster) ---------------------------------------------

    def record_topology(self, cluster: str, owner_task: str, topology: str, now: float) -> str:
        """Record a cluster's topology (JSON) once; answers the owner task of the stored row."""
        self._run(
            f"""CREATE TABLE IF NOT EXISTS {self._meta}.clusters (
                name VARCHAR(64) NOT NULL PRIMARY KEY,
                owner_task VARCHAR(128) NOT NULL,
                topology TEXT NOT NULL,
                created_at DOUBLE NOT NULL
            ) ENGINE=InnoDB"""
        )
        self._run(
            f"INSERT IGNORE INTO {self._meta}.clusters (name, owner_task, topology, created_at) VALUES (%s, %s, %s, %s)",
            (cluster, owner_task, topology, now),
        )
        row = self._one(f"SELECT owner_task FROM {self._meta}.clusters WHERE name = %s", (cluster,))
        assert row is not None
        return str(row[0])

    def forget_topology(self, cluster: str, owner_task: str) -> bool:
        """Delete the row only if this task recorded it; False when there was none of ours."""
        exists = self._one(
            "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'clusters'",
            (self._meta.strip("`"),),
        )
        if exists is None:
            return False
        return self._run(f"DELETE FROM {self._meta}.clusters WHERE name = %s AND owner_task = %s",
                         (cluster, owner_task)) > 0

    # --- the parts -----------------------------------------------------------------------------

    def _run(self, sql: str, params: Sequence[Any] | None = None) -> int:
        with self._conn.cursor() as cursor:
            return int(cursor.execute(sql, params))

    def _one(self, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
        with self._conn.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()  # type: ignore[no-any-return]

    def _all(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._conn.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())
