"""A package's public names, each imported from its home on first use (PEP 562).

A public module that gathers names from several private ones (the engine's face, common.flows)
declares them as `EXPORTS = {home module: (names...)}` and sets `__getattr__ = lazy(__name__,
EXPORTS)`: reaching one small piece (`baton get` reading a task) then does not load the rest (the
engine's changes, the flows pipeline)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def homes(exports: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """name -> its home module; a name exported twice is a mistake in the table."""
    found: dict[str, str] = {}
    for home, names in exports.items():
        for name in names:
            if name in found:
                raise ValueError(f"{name} is exported from both {found[name]} and {home}")
            found[name] = home
    return found


def lazy(module: str, exports: Mapping[str, tuple[str, ...]]) -> Callable[[str], Any]:
    """The module's `__getattr__`: imports a public name from its home, then keeps it."""
    where = homes(exports)

    def __getattr__(name: str) -> Any:
        home = where.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[module], name, value)
        return value

    return __getattr__
