"""The field of the task document an operator's pause is kept in: no new unit starts while it is
set (docs/design/operations.md)."""

from __future__ import annotations

from common.engine.core.doc_base import Doc, OperatorRequest


class PauseFields(Doc):
    Paused: OperatorRequest | None = None
