"""The field of the task document a delayed start is kept in."""

from __future__ import annotations

from common.engine.core.doc_base import Doc


class StartAtFields(Doc):
    # The submission's start_at: nothing starts before it, however the task comes to dispatch
    # (its creation, a resume after a pause, the end of a wait).
    StartAt: float | None = None
