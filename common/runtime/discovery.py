"""Where a module's command registry is found by convention: `modules.<name>.commands:registry`,
and its hooks: `modules.<name>.hooks:HOOKS`.

`baton up` runs every module flows.yaml names from there, and `baton check-flows` checks the
file against them, so a user's own module under modules/ needs no flag to be known.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Iterable
from typing import Any

from common.runtime.registry import load_registry


def registry_ref(module: str) -> str:
    return f"modules.{module}.commands:registry"


def has_conventional_registry(module: str) -> bool:
    """Whether modules/<module>/commands.py exists on the import path (nothing is imported)."""
    if not module.isidentifier():
        return False
    try:
        return importlib.util.find_spec(f"modules.{module}.commands") is not None
    except ModuleNotFoundError:  # no modules/<module> package at all
        return False


def conventional_commands(modules: Iterable[str]) -> dict[str, frozenset[str]]:
    """module -> the commands its registry serves, for each of `modules` that has one where the
    convention says. A registry that exists but fails to import raises: that is a bug to see."""
    return {name: load_registry(registry_ref(name)).names() for name in sorted(set(modules)) if has_conventional_registry(name)}


def conventional_modules() -> list[str]:
    """Every package under modules/ with a commands.py: the modules this checkout can run.
    Found by where the `modules` package lies, not by importing it: common depends on no module."""
    spec = importlib.util.find_spec("modules")
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(info.name for info in pkgutil.iter_modules(spec.submodule_search_locations)
                  if info.ispkg and has_conventional_registry(info.name))  # fmt: skip


def module_hooks(name: str) -> list[Any]:
    """What the modules offer under `name` in their `modules.<module>.hooks:HOOKS`: how `oss`
    reaches a module's own domain (the mysql reconciler) without importing the module."""
    found = []
    for module in conventional_modules():
        try:
            declared = importlib.util.find_spec(f"modules.{module}.hooks") is not None
        except ModuleNotFoundError:
            declared = False
        if declared:
            hooks = getattr(importlib.import_module(f"modules.{module}.hooks"), "HOOKS", {})
            if name in hooks:
                found.append(hooks[name])
    return found
