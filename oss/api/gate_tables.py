"""The gates' own tables as the API reads them (a dry run's plan, the /locks view): one set per
app, opened on first use beside the task store and closed with the app (oss.api.parts), so
that each table has one connection per app whichever route reads it first."""

from __future__ import annotations

from fastapi import Request

from common.store.gates.lock.table import LockTable
from common.store.side_stores import GateTables, open_gate_tables
from oss.api.auth import Context
from oss.api.parts import app_part


def gate_tables(request: Request, context: Context) -> GateTables:
    """Every gate's own table, by its gate's name."""
    return app_part(request, "gate_tables", lambda: open_gate_tables(context.settings.store_url, indexes="none"))


def lock_table(request: Request, context: Context) -> LockTable:
    """The lock gate's table with its reads (a wrapper of the app's one lock store: the app
    closes the store, never this)."""
    return LockTable(gate_tables(request, context)["lock"])
