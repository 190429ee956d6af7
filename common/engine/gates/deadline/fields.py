"""The fields of the task document a deadline is kept in: past `Deadline` (when the task may
start, plus the type's `deadline`) the task rolls back (docs/design/operations.md)."""

from __future__ import annotations

from common.engine.core.doc_base import Doc


class DeadlineFields(Doc):
    Deadline: float | None = None
    DeadlineSeconds: float | None = None
