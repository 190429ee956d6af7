"""The field of the task document its own lock is kept in (docs/design/locks.md)."""

from __future__ import annotations

from common.engine.core.doc_base import Doc
from common.engine.gates.lock.documents import TaskLock


class LockFields(Doc):
    Lock: TaskLock | None = None  # its task type declares a lock
