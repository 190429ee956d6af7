"""The bodies of the outbox entries the for_each kind declares (`OUTBOX_KINDS` in its declares.py
names them), as common.engine.outbox.body_of checks an entry's body when its relay reads it."""

from __future__ import annotations

from typing import Any

from common.engine.core.bodies import Body


class ItemsBody(Body):
    Cursor: int
    Generation: int
    Values: list[Any] | None = None  # open_items only: the values, fixed when the step opened
    # open_items of a page of a source (docs/design/item-sources.md): its first item's index, and
    # whether it is the last page (the relay then asks whether the step settled)
    From: int | None = None
    Last: bool | None = None
    # reopen_item_rollbacks only: the operator's action (retry-rollback or compensate), who, why
    Action: str | None = None
    Actor: str | None = None
    Reason: str | None = None
    # cancel_items only, from a cancel that stops running runs: its {Actor, Reason}; the claimed
    # normal runs are stopped too
    Stop: dict[str, str] | None = None
    # wave_gate only: the wave whose gate it ends, and the phase it ends (baking, or paused)
    Wave: int | None = None
    Phase: str | None = None
