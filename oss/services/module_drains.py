"""Drain and undrain a module (docs/design/operations.md): what the API and `baton modules
drain|undrain` both do. Only a module flows.yaml names may be drained; every change is logged with
who and why and stored in its record (common/store/side/drains.py), compare-and-set on its Version.

A drain of a drained module is refused, naming who drained it and since when: written again, it
would replace the first operator's who and why while their deploy still runs, and the undrain
of one would let the other's steps go. An undrain of a module that is not drained is refused the
same way. The reason is stored with its secrets masked (common.secrets.free_text), so the record,
every log line quoting it and every view of it show it masked alike.
"""

from __future__ import annotations

from collections.abc import Collection

import structlog

from common.engine.views import utc_text
from common.input_limits import InputLimits, check_input, printable
from common.secrets.free_text import masked_free_text
from common.store.side.drains import ModuleDrain, ModuleDrains, changed

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


class DrainConflict(RuntimeError):
    """The module is drained already (or, for an undrain, is not): its text says by whom."""


def set_drain(drains: ModuleDrains, known: Collection[str], module: str, drained: bool, actor: str, reason: str,
              now: float, limits: InputLimits | None = None) -> ModuleDrain:
    """Drain (`drained`) or undrain `module`; returns the stored record. InvalidInput: the actor
    or the reason holds a control or invisible character; DrainConflict: it is in that state
    already."""
    if module not in known:
        raise UnknownModule(module, known)
    check_input(limits or InputLimits(), ("actor",), actor=actor, reason=reason)
    reason = masked_free_text(reason)
    for _ in range(TRIES):
        current = drains.get(module)
        conflict = drain_conflict(current, module, drained)
        if conflict is not None:
            raise DrainConflict(conflict)
        wanted = changed(current, module, drained, actor, reason, now)
        if drains.put(wanted, None if current is None else current.Version):
            log.info("module drained" if drained else "module undrained", module=module, actor=actor, reason=reason,
                     version=wanted.Version)
            return wanted
    raise DrainRace(f"module {module}'s drain record kept changing; try again")


def drain_conflict(current: ModuleDrain | None, module: str, drained: bool) -> str | None:
    """Why this change would overwrite the record's who and why instead of changing the state
    (None: it changes it). Pure."""
    if current is not None and current.Drained == drained:
        by = f"by {printable(current.Actor)} at {utc_text(current.Since)}"
        if drained:
            return f"module {module} is drained already ({by}): undrain it first"
        return f"module {module} is not drained (undrained {by})"
    if current is None and not drained:
        return f"module {module} is not drained (never drained)"
    return None


def shown_reason(drain: ModuleDrain) -> str:
    """A record's reason as a view or a log line shows it (one stored before reasons were masked too)."""
    return masked_free_text(drain.Reason)
