"""The one optimistic read-change-write loop for a versioned document: an item record, a lock
document, a schedule (a task's own loop, common.store.tasks.mutate, adds what a task change needs).

`change` is pure and may run several times: on a lost race the document is read again and the
change decided again on what is stored now, never on the stale read. It answers None when there
is nothing to write (an engine change's Refusal: `common.engine.core.units.none_if_refused`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from common.errors import StoreError

MAX_TRIES = 50  # each try is one read and one write; only a storm of writers on one document loses this often


class Versioned(Protocol):
    Version: int


V = TypeVar("V", bound=Versioned)


def compare_and_set_loop(current: V | None, *, read: Callable[[], V | None], change: Callable[[V], V | None],
                         write: Callable[[V, int], bool], what: str, max_tries: int = MAX_TRIES) -> V | None:
    """Apply `change` to `current` (read again after a lost race) and write it with a
    compare-and-set on `Version`. The document as written, or None: refused, or gone."""
    for _ in range(max_tries):
        if current is None:
            return None
        new = change(current)
        if new is None:
            return None
        new.Version = current.Version + 1
        if write(new, current.Version):
            return new
        current = read()
    raise StoreError(f"{what}: gave up after {max_tries} lost compare-and-set races")
