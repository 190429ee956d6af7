"""The shared MariaDB for tests: reach it, and give each test a sandbox that is removed afterwards.

Every sandbox has its own name prefix (databases and users) and its own baton meta schema, so
tests running at the same time, here or in another worktree, never see each other's instances.
Like every service: skipped on a laptop without it, a failure under CI=true.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.support.naming import short_tag
from tests.support.services import port_open, require_usable

ADMIN_URL = os.environ.get("BATON_TEST_MYSQL_ADMIN_URL", "mysql://root@127.0.0.1:3306")


def _address() -> dict[str, Any]:
    from modules.mysql.settings import parse_admin_url

    address = parse_admin_url(ADMIN_URL)
    return {"host": address.host, "port": address.port, "user": address.user, "password": address.password or ""}


def connect(**overrides: Any) -> Any:
    import pymysql

    return pymysql.connect(**{**_address(), "autocommit": True, "connect_timeout": 5, **overrides})


def require_mariadb() -> None:
    address = _address()
    configured = "BATON_TEST_MYSQL_ADMIN_URL" in os.environ  # named for this run: must work
    reachable = port_open(address["host"], address["port"])
    require_usable(configured, reachable, f"no MariaDB/MySQL at {address['host']}:{address['port']}")
    try:
        connect().close()
    except Exception as exc:  # reachable but unusable (credentials): same verdict, with the reason
        require_usable(configured, False, f"cannot log in to MariaDB at {ADMIN_URL}: {exc}")


@dataclass(frozen=True)
class Sandbox:
    prefix: str  # every database and user a test creates starts with it
    meta_schema: str
    admin_url: str

    def name(self, suffix: str) -> str:
        return f"{self.prefix}{suffix}"

    def env(self) -> dict[str, str]:
        """The mysql module's settings for this sandbox."""
        return {"BATON_MYSQL_ADMIN_URL": self.admin_url, "BATON_MYSQL_META_SCHEMA": self.meta_schema}

    def databases(self) -> set[str]:
        with contextlib.closing(connect()) as conn, conn.cursor() as cur:
            cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
            return {name for (name,) in cur.fetchall() if name.startswith(self.prefix)}

    def users(self) -> set[tuple[str, str]]:
        with contextlib.closing(connect()) as conn, conn.cursor() as cur:
            cur.execute("SELECT User, Host FROM mysql.user")
            return {(user, host) for user, host in cur.fetchall() if user.startswith(self.prefix)}

    def owned(self) -> set[str]:
        """Names in this sandbox's ownership table."""
        with contextlib.closing(connect()) as conn, conn.cursor() as cur:
            cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (self.meta_schema,))
            if cur.fetchone() is None:
                return set()
            cur.execute(f"SELECT name FROM `{self.meta_schema}`.instances")
            return {name for (name,) in cur.fetchall()}

    def remove_all(self) -> None:
        with contextlib.closing(connect()) as conn, conn.cursor() as cur:
            for user, host in self.users():
                cur.execute("DROP USER IF EXISTS %s@%s", (user, host))
            for name in self.databases():
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cur.execute(f"DROP DATABASE IF EXISTS `{self.meta_schema}`")


@contextlib.contextmanager
def mariadb_sandbox() -> Iterator[Sandbox]:
    require_mariadb()
    tag = short_tag()  # the run's and the worker's id, then a random part
    sandbox = Sandbox(prefix=f"t{tag}_", meta_schema=f"baton_meta_t{tag}", admin_url=ADMIN_URL)
    try:
        yield sandbox
    finally:
        sandbox.remove_all()
