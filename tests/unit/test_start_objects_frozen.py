"""A module process freezes what its start made (common/runtime/start_objects.py): the garbage
its start left is collected first, never kept forever, and what the steps make afterwards is
still collected."""

from __future__ import annotations

import gc
import weakref

from common.runtime.start_objects import freeze_start_objects


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # only the cycle collector frees these
    return weakref.ref(a)


def test_the_start_s_garbage_is_collected_and_what_stays_is_frozen():
    kept = _Node()
    start_garbage = _cycle()
    try:
        freeze_start_objects()
        assert start_garbage() is None
        assert gc.get_freeze_count() > 0
        assert all(found is not kept for found in gc.get_objects())  # frozen: in no generation
        step_garbage = _cycle()
        gc.collect()
        assert step_garbage() is None
    finally:
        gc.unfreeze()
