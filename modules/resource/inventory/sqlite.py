"""The inventory on SQLite: two tables in the task store's file, safe across threads and processes.

Every change is one BEGIN IMMEDIATE transaction: it holds the file's write lock from its first
read, so "is there room?" and "take it" cannot interleave with another writer in any process.
What a host has in use is never stored: it is summed from its live claims at the time asked, so a
reservation stops counting the moment it expires, swept or not.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from modules.resource.inventory import rules
from modules.resource.inventory.port import (
    Capacity,
    Claim,
    ClaimClosed,
    ClaimState,
    Host,
    HostConflict,
    HostState,
    NoCapacity,
    UnknownClaim,
    UnknownHost,
)
from common.store.sqlite.connections import LocalConnections, immediate, translated

_SCHEMA = """
CREATE TABLE IF NOT EXISTS inventory_hosts (
    name       TEXT PRIMARY KEY,
    cpu        INTEGER NOT NULL,
    memory_mb  INTEGER NOT NULL,
    storage_gb INTEGER NOT NULL,
    state      TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS inventory_claims (
    key         TEXT PRIMARY KEY,
    host        TEXT NOT NULL REFERENCES inventory_hosts (name),
    holder      TEXT NOT NULL,
    cpu         INTEGER NOT NULL,
    memory_mb   INTEGER NOT NULL,
    storage_gb  INTEGER NOT NULL,
    state       TEXT NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL,
    updated_at  REAL NOT NULL,
    released_by TEXT
);
CREATE INDEX IF NOT EXISTS inventory_claims_host ON inventory_claims (host, state);
CREATE INDEX IF NOT EXISTS inventory_claims_holder ON inventory_claims (holder, state);
CREATE INDEX IF NOT EXISTS inventory_claims_released_by ON inventory_claims (released_by)
    WHERE released_by IS NOT NULL;
CREATE INDEX IF NOT EXISTS inventory_claims_expiry ON inventory_claims (expires_at)
    WHERE state = 'reserved'
"""

# Live = deducted, or reserved and not yet expired at ? (now).
_HOSTS = """
SELECT h.name, h.cpu, h.memory_mb, h.storage_gb, h.state, h.created_at,
       COALESCE(SUM(c.cpu), 0), COALESCE(SUM(c.memory_mb), 0), COALESCE(SUM(c.storage_gb), 0)
FROM inventory_hosts h
LEFT JOIN inventory_claims c
  ON c.host = h.name AND (c.state = 'deducted' OR (c.state = 'reserved' AND c.expires_at > ?))
{where}
GROUP BY h.name
ORDER BY h.name
"""
_CLAIM_COLUMNS = "key, host, holder, cpu, memory_mb, storage_gb, state, created_at, expires_at, updated_at, released_by"
_CLOSED = ("restored", "released", "expired")


def _host(row: tuple[Any, ...]) -> Host:
    name, cpu, memory, storage, state, created, used_cpu, used_memory, used_storage = row
    return Host(
        name=name,
        capacity=Capacity(cpu, memory, storage),
        state=HostState(state),
        used=Capacity(used_cpu, used_memory, used_storage),
        created_at=created,
    )


def _claim(row: tuple[Any, ...], now: float) -> Claim:
    key, host, holder, cpu, memory, storage, state, created, expires, updated, released_by = row
    return Claim(
        key=key,
        host=host,
        holder=holder,
        need=Capacity(cpu, memory, storage),
        state=rules.effective_state(ClaimState(state), expires, now),
        created_at=created,
        expires_at=expires,
        updated_at=updated,
        released_by=released_by,
    )


class SqliteInventory:
    def __init__(self, path: str | os.PathLike[str]):
        self.path = os.fspath(path)
        self._conns = LocalConnections(self.path, _SCHEMA)

    # --- hosts ---------------------------------------------------------------------------------

    @translated
    def add_host(self, name: str, capacity: Capacity, now: float) -> Host:
        rules.check_host_name(name)
        rules.check_capacity(capacity, "capacity")
        conn = self._conns.get()
        with immediate(conn):
            conn.execute(
                "INSERT OR IGNORE INTO inventory_hosts VALUES (?, ?, ?, ?, 'active', ?, ?)",
                (name, capacity.cpu, capacity.memory_mb, capacity.storage_gb, now, now),
            )
            host = self._host(conn, name, now)
        assert host is not None
        if host.capacity != capacity:
            raise HostConflict(f"host {name} exists with capacity {host.capacity.as_dict()}")
        return host

    @translated
    def get_host(self, name: str, now: float) -> Host | None:
        return self._host(self._conns.get(), name, now)

    @translated
    def list_hosts(self, now: float) -> list[Host]:
        return [_host(r) for r in self._conns.get().execute(_HOSTS.format(where=""), (now,))]

    @translated
    def set_host_state(self, name: str, state: HostState, now: float) -> Host:
        conn = self._conns.get()
        with immediate(conn):
            conn.execute(
                "UPDATE inventory_hosts SET state = ?, updated_at = ? WHERE name = ? AND state != ?",
                (state.value, now, name, state.value),
            )
            host = self._host(conn, name, now)
        if host is None:
            raise UnknownHost("no such host")  # the name asked for is not echoed
        return host

    # --- claims --------------------------------------------------------------------------------

    @translated
    def reserve(self, key: str, need: Capacity, holder: str, now: float, expires_at: float) -> Claim:
        rules.check_reservation(key, holder, need)
        conn = self._conns.get()
        with immediate(conn):
            existing = self._claim(conn, key, now)
            if existing is not None:
                return rules.check_same_request(existing, need, holder)
            self._expire(conn, now)
            hosts = [_host(r) for r in conn.execute(_HOSTS.format(where=""), (now,))]
            host = rules.choose_host(hosts, need)
            if host is None:
                raise NoCapacity(rules.no_room_message(need, hosts))
            conn.execute(
                f"INSERT INTO inventory_claims ({_CLAIM_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, 'reserved', ?, ?, ?, NULL)",
                (key, host.name, holder, need.cpu, need.memory_mb, need.storage_gb, now, expires_at, now),
            )
            claim = self._claim(conn, key, now)
        assert claim is not None
        return claim

    @translated
    def get_claim(self, key: str, now: float) -> Claim | None:
        return self._claim(self._conns.get(), key, now)

    @translated
    def list_claims(
        self, now: float, *, holder: str | None = None, host: str | None = None, live_only: bool = False
    ) -> list[Claim]:
        where, params = [], []
        if holder is not None:
            where.append("holder = ?")
            params.append(holder)
        if host is not None:
            where.append("host = ?")
            params.append(host)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        sql = f"SELECT {_CLAIM_COLUMNS} FROM inventory_claims {clause} ORDER BY created_at, key"
        claims = [_claim(r, now) for r in self._conns.get().execute(sql, params)]
        return [c for c in claims if c.live] if live_only else claims

    @translated
    def deduct(self, key: str, now: float) -> Claim:
        conn = self._conns.get()
        with immediate(conn):
            claim = self._claim(conn, key, now)
            if claim is None:
                raise UnknownClaim(f"no claim {key}")
            if claim.state is ClaimState.RESERVED:
                conn.execute(
                    "UPDATE inventory_claims SET state = 'deducted', expires_at = NULL, updated_at = ? WHERE key = ?",
                    (now, key),
                )
                claim = self._claim(conn, key, now)
            elif claim.state is ClaimState.EXPIRED:
                self._expire(conn, now)  # record what the reader already sees
        assert claim is not None
        if claim.state is not ClaimState.DEDUCTED:
            raise ClaimClosed(claim)
        return claim

    @translated
    def restore(self, key: str, now: float) -> Claim | None:
        conn = self._conns.get()
        with immediate(conn):
            self._expire(conn, now)  # a lapsed reservation stays EXPIRED: it was never given back
            conn.execute(
                "UPDATE inventory_claims SET state = 'restored', expires_at = NULL, updated_at = ? "
                "WHERE key = ? AND state IN ('reserved', 'deducted')",
                (now, key),
            )
            return self._claim(conn, key, now)

    @translated
    def release(self, holder: str, key: str, now: float) -> list[Claim]:
        rules.check_key(key)
        conn = self._conns.get()
        with immediate(conn):
            done = conn.execute("SELECT 1 FROM inventory_claims WHERE released_by = ? LIMIT 1", (key,)).fetchone()
            if done is None:
                conn.execute(
                    "UPDATE inventory_claims SET state = 'released', released_by = ?, updated_at = ? "
                    "WHERE holder = ? AND state = 'deducted'",
                    (key, now, holder),
                )
            sql = f"SELECT {_CLAIM_COLUMNS} FROM inventory_claims WHERE released_by = ? ORDER BY created_at, key"
            return [_claim(r, now) for r in conn.execute(sql, (key,))]

    @translated
    def expire_due(self, now: float) -> int:
        conn = self._conns.get()
        with immediate(conn):
            return self._expire(conn, now)

    @translated
    def prune_closed(self, closed_before: float) -> int:
        cursor = self._conns.get().execute(
            f"DELETE FROM inventory_claims WHERE state IN {_CLOSED} AND updated_at < ?", (closed_before,)
        )
        return cursor.rowcount

    # --- lifecycle -----------------------------------------------------------------------------

    @translated
    def ping(self) -> None:
        self._conns.get().execute("SELECT 1 FROM inventory_hosts LIMIT 1").fetchall()

    def close(self) -> None:
        self._conns.close()

    # --- the parts -----------------------------------------------------------------------------

    def _host(self, conn: sqlite3.Connection, name: str, now: float) -> Host | None:
        row = conn.execute(_HOSTS.format(where="WHERE h.name = ?"), (now, name)).fetchone()
        return None if row is None else _host(row)

    def _claim(self, conn: sqlite3.Connection, key: str, now: float) -> Claim | None:
        row = conn.execute(f"SELECT {_CLAIM_COLUMNS} FROM inventory_claims WHERE key = ?", (key,)).fetchone()
        return None if row is None else _claim(row, now)

    def _expire(self, conn: sqlite3.Connection, now: float) -> int:
        # The expiry instant stays as updated_at, so pruning counts from when it lapsed.
        cursor = conn.execute(
            "UPDATE inventory_claims SET state = 'expired', updated_at = expires_at "
            "WHERE state = 'reserved' AND expires_at <= ?",
            (now,),
        )
        return cursor.rowcount
