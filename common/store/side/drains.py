"""Module drains: one record per module saying whether its steps are parked for a deploy, who
drained (or undrained) it and why (docs/design/operations.md).

OSS writes it (`baton modules drain|undrain`, the API); every process of the module reads it
before a claim, and the unserved-module watch reads it too. A change is a compare-and-set on
`Version`, so two operators acting at once cannot lose one another's reason. Undrain keeps the
record (`Drained` false): who let the steps go, and why, stays readable.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict


class ModuleDrain(BaseModel):
    model_config = ConfigDict(extra="forbid")

    Module: str
    Drained: bool
    Actor: str  # who drained or undrained it last
    Reason: str
    Since: float  # when that change was made
    Version: int = 1


class ModuleDrains(Protocol):
    def get(self, module: str) -> ModuleDrain | None:
        """The module's record, or None when it was never drained."""

    def drains(self) -> list[ModuleDrain]:
        """Every record, drained or not, by Module."""

    def put(self, drain: ModuleDrain, expected_version: int | None) -> bool:
        """Store `drain` iff the stored record is at `expected_version` (None: there is none
        yet); `drain.Version` must be one more (1 for a new record). False when another writer won."""

    def close(self) -> None: ...


def check_next_version(drain: ModuleDrain, expected_version: int | None) -> None:
    wanted = 1 if expected_version is None else expected_version + 1
    if drain.Version != wanted:
        raise ValueError(f"module drain Version must be {wanted}, not {drain.Version}")


def changed(current: ModuleDrain | None, module: str, drained: bool, actor: str, reason: str,
            now: float) -> ModuleDrain:
    """The record after an operator drains (or undrains) `module`: pure."""
    version = 1 if current is None else current.Version + 1
    return ModuleDrain(Module=module, Drained=drained, Actor=actor, Reason=reason, Since=now, Version=version)
