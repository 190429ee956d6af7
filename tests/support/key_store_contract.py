"""The contract every store of one versioned document per key keeps (the lock and the rate
stores): a compare-and-set inserts a key once, and of two writers from the same version one wins."""

from __future__ import annotations

from typing import Any

import pytest


def check_compare_and_set(store: Any, first: Any, other: Any, rewrites: tuple[Any, Any]) -> None:
    """`first`: key "k" at version 1; `other`: another document of key "k"; `rewrites`: two
    different version-2 changes of `first`."""
    # (A helper's asserts are not rewritten by pytest: each says what it checks.)
    assert store.compare_and_set(first, 0) is True, "the first insert of a key"
    assert store.compare_and_set(other, 0) is False, "a second insert of the same key"
    assert store.get("k") == first, store.get("k")
    assert store.get("missing") is None
    a, b = rewrites
    assert store.compare_and_set(a, 1) is True, "the first writer from version 1"
    assert store.compare_and_set(b, 1) is False, "the second writer from version 1"
    assert store.get("k") == a, store.get("k")
    with pytest.raises(ValueError):
        store.compare_and_set(a.model_copy(update={"Version": 9}), 2)
