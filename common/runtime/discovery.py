"""Where a module's command registry is found by convention: `modules.<name>.commands:registry`,
and its hooks (common.module_hooks): `modules.<name>.hooks:HOOKS`.

`baton up` runs every module flows.yaml names from there, and `baton check-flows` checks the
file against them, so a user's own module under modules/ needs no flag to be known.
"""

from __future__ import annotations

from collections.abc import Iterable

from common.module_hooks import has_conventional_registry
from common.runtime.registry import load_registry


def registry_ref(module: str) -> str:
    return f"modules.{module}.commands:registry"


def conventional_commands(modules: Iterable[str]) -> dict[str, frozenset[str]]:
    """module -> the commands its registry serves, for each of `modules` that has one where the
    convention says. A registry that exists but fails to import raises: that is a bug to see."""
    return {name: load_registry(registry_ref(name)).names() for name in sorted(set(modules)) if has_conventional_registry(name)}
