"""Names, grants and passwords for MySQL/MariaDB: pure functions, no I/O.

Identifiers cannot be bound parameters in SQL, so a name reaches a statement only after it passed
the allow-list (common.instance_names: a-z, 0-9, `_`) AND is backtick-quoted. In a GRANT, `_` and
`%` in a database name are wildcards: `app_1`.* would also cover `appx1`, so they are escaped.
Passwords and user names are never formatted into SQL: they are bound parameters.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import string
from collections.abc import Mapping
from typing import Any

from common.errors import CommandFailed
from common.instance_names import BadInstanceName, check_instance_name

# Names a control plane must never hand out: system schemas and accounts, and their look-alikes.
RESERVED_NAMES = frozenset({
    "mysql", "information_schema", "performance_schema", "sys", "test", "root", "mariadb", "admin",
})

# What a flow's `access` parameter may ask for. Never GRANT OPTION: an instance's user must not be
# able to hand its rights on. ALL covers only the instance's own database.
ACCESS_PRIVILEGES: Mapping[str, tuple[str, ...]] = {
    "read_only": ("SELECT", "SHOW VIEW"),
    "read_write": (
        "SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "INDEX", "ALTER",
        "CREATE TEMPORARY TABLES", "LOCK TABLES", "CREATE VIEW", "SHOW VIEW", "EXECUTE",
    ),
    "all": ("ALL PRIVILEGES",),
}
DEFAULT_ACCESS = "read_write"

PASSWORD_ALPHABET = string.ascii_letters + string.digits
PASSWORD_LENGTH = 32  # ~190 bits
MIN_PASSWORD_LENGTH = 12
MAX_PASSWORD_LENGTH = 128
# Identifiers of baton's own (the meta schema) and host patterns from configuration.
SCHEMA_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$", re.ASCII)
USER_HOST = re.compile(r"^[A-Za-z0-9.%_:/-]{1,255}$", re.ASCII)


def instance_name(value: object, meta_schema: str) -> str:
    """The allow-list plus the reserved names; CommandFailed (never retried) when refused."""
    try:
        name = check_instance_name(value)
    except BadInstanceName as exc:
        raise CommandFailed(str(exc), retryable=False) from None
    if name in RESERVED_NAMES or name == meta_schema or name.startswith("baton_meta"):
        raise CommandFailed(f"instance name {name!r} is reserved", retryable=False)
    return name


def quote_identifier(name: str) -> str:
    """Backtick-quote an identifier that already passed an allow-list (doubling is belt and braces)."""
    return "`" + name.replace("`", "``") + "`"


def grant_database(name: str) -> str:
    """The database of a GRANT ... ON <this>.*, its wildcards escaped so it names exactly one."""
    escaped = name.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%")
    return quote_identifier(escaped)


def access_from(parameters: Mapping[str, Any]) -> str:
    access = parameters.get("access", DEFAULT_ACCESS)
    if access not in ACCESS_PRIVILEGES:
        raise CommandFailed(f"access must be one of {sorted(ACCESS_PRIVILEGES)} (got {access!r})", retryable=False)
    return str(access)


def given_password(parameters: Mapping[str, Any]) -> str | None:
    """A password the submitter chose, checked (never echoed); None to have one derived."""
    value = parameters.get("password")
    if value is None:
        return None
    if not isinstance(value, str) or not MIN_PASSWORD_LENGTH <= len(value) <= MAX_PASSWORD_LENGTH:
        raise CommandFailed(
            f"password must be a string of {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH} characters",
            retryable=False,
        )
    if not value.isprintable() or not value.isascii():
        raise CommandFailed("password must be printable ASCII", retryable=False)
    return value


def derive_password(secret: bytes, owner_key: str) -> str:
    """The same password for the same step, however often it runs: a re-run after a crash finds
    the user it created with exactly the password it reports, and nothing needs storing.

    HMAC-SHA256 in counter mode, mapped onto the alphabet by rejection (no modulo bias).
    """
    chars: list[str] = []
    counter = 0
    limit = 256 - 256 % len(PASSWORD_ALPHABET)
    while len(chars) < PASSWORD_LENGTH:
        block = hmac.new(secret, f"baton-mysql-password:{owner_key}:{counter}".encode(), hashlib.sha256).digest()
        chars.extend(PASSWORD_ALPHABET[b % len(PASSWORD_ALPHABET)] for b in block if b < limit)
        counter += 1
    return "".join(chars[:PASSWORD_LENGTH])


def connection_limit(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100_000:
        raise CommandFailed(f"max_connections must be a whole number from 0 to 100000 (got {value!r})", retryable=False)
    return value
