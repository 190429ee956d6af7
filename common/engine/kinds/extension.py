"""What a kind's extension is: a part of a kind of step kept in a folder of the kind's folder (a
`for_each` step's waves and its source, a command's callbacks), which the kind finds by folder
and asks through hooks, so the kind names none of its extensions (docs/design/kind-extensions.md).

An extension's folder holds, each optional: `extension.py` (`EXTENSION`, an instance of the
kind's subclass of `KindExtension` answering the hooks it needs), `fields.py` (`STEP_PART`,
`RUN_PART`: its fields of the documents, composed into the kind's), `spec.py` (`PART`: its keys
of flows.yaml), `declares.py` (its run states, waits and outbox kinds) and `face.py` (what the
engine's public modules offer of it): common/engine/core/declared.py finds each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from common.engine.core.declared import declared_parts

Ext = TypeVar("Ext")


class KindExtension:
    # Extensions are asked in this order, then by folder name: a hook whose answers depend on
    # one another is asked of the lower first.
    order = 50


def found_extensions(package: str) -> tuple[Any, ...]:
    """The `EXTENSION` of every folder of the kind's `package` that has an `extension.py`, in
    their order."""
    found = declared_parts(package, "EXTENSION", module="extension")
    return tuple(sorted(found, key=lambda extension: extension.order))


def lazily(package: str) -> Callable[[], tuple[Any, ...]]:
    """The extensions of `package`, found at the first ask: an extension's hooks import the
    kind's own modules, which ask the extensions in turn."""
    cached: list[tuple[Any, ...]] = []

    def extensions() -> tuple[Any, ...]:
        if not cached:
            cached.append(found_extensions(package))
        return cached[0]

    return extensions
