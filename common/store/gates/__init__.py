"""The tables gates keep of their own beside the tasks, one folder each (docs/design/gates.md, "A
gate's own table and relay"): found by folder, so the store's openers, the MongoDB index catalog
and the outbox publisher open, index and relay every gate's table without naming one.

Each folder's `side.py` declares its `SIDE` with names, not imports ("module:Class"): reading the
declarations imports no adapter, so a SQLite deployment never imports pymongo."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass
from functools import cache

from common.engine.outbox import Flusher


@dataclass(frozen=True)
class GateTable:
    gate: str  # the gate's name, as its folder in common/engine/gates/ is named
    sqlite: str  # "module:Class" of its SQLite adapter
    mongo: str  # "module:Class" of its MongoDB adapter
    mongo_indexes: str | None = None  # "module:NAME": {collection: [IndexSpec, ...]}
    relay: str | None = None  # "module:Class", built with (task store, timing, flush)
    flusher: Flusher | None = None  # the outbox entries its relay carries
    # How often the sweeper calls its relay's `reclaim()` (what crashes leave in the table), in
    # seconds; None: its relay has none (common.relay.gate_reclaims).
    reclaim_every: float | None = None


@cache
def gate_tables() -> tuple[GateTable, ...]:
    """Every folder's `SIDE`, in the folders' order."""
    found = []
    for folder in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        name = f"{__name__}.{folder.name}.side"
        if folder.ispkg and importlib.util.find_spec(name) is not None:
            found.append(importlib.import_module(name).SIDE)
    return tuple(found)


def gate_table(gate: str) -> GateTable:
    """The table `gate` declares (KeyError naming it when no folder does)."""
    for table in gate_tables():
        if table.gate == gate:
            return table
    raise KeyError(f"no gate table {gate!r} (known: {', '.join(t.gate for t in gate_tables()) or 'none'})")
