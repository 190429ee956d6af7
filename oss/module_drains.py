"""Drain and undrain a module (DESIGN.md sec. 10): what the API and `baton modules drain|undrain`
both do. Only a module flows.yaml names may be drained; every change is logged with who and why
and stored in its record (common/store/drains_port.py), compare-and-set on its Version.
"""

from __future__ import annotations

from collections.abc import Collection

import structlog

from common.store.drains_port import ModuleDrain, ModuleDrains, changed

log = structlog.get_logger(__name__)
TRIES = 5  # another operator's change in between: read again and write ours after it


class UnknownModule(LookupError):
    """Its text names the modules there are, not the one asked for: an API answer never echoes a
    path's value (the CLI, which may, adds it)."""

    def __init__(self, module: str, known: Collection[str]):
        self.module = module
        super().__init__(f"no such module in flows.yaml (its modules: {', '.join(sorted(known)) or 'none'})")


class DrainRace(RuntimeError):
    """The record kept changing under us: say so rather than loop."""


def set_drain(drains: ModuleDrains, known: Collection[str], module: str, drained: bool, actor: str, reason: str,
              now: float) -> ModuleDrain:
    """Drain (`drained`) or undrain `module`; returns the stored record. Draining a drained
    module records the new who and why (each request is audited); so does undraining."""
    if module not in known:
        raise UnknownModule(module, known)
    for _ in range(TRIES):
        current = drains.get(module)
        wanted = changed(current, module, drained, actor, reason, now)
        if drains.put(wanted, None if current is None else current.Version):
            log.info("module drained" if drained else "module undrained", module=module, actor=actor, reason=reason,
                     version=wanted.Version)
            return wanted
    raise DrainRace(f"module {module}'s drain record kept changing; try again")
