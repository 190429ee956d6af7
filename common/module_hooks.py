"""How common and oss reach a module's own domain without importing the module: the hooks each
module declares in `modules.<name>.hooks:HOOKS` (a name -> what it offers under that name).

The resource module offers its inventory this way, the mysql module its reconciler and its
periodic job. The lookup sits below every other part of common (it imports nothing of it), so
the store's adapters may ask it too (the inventory's MongoDB indexes).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from typing import Any


def has_conventional_registry(module: str) -> bool:
    """Whether modules/<module>/commands.py exists on the import path (nothing is imported)."""
    if not module.isidentifier():
        return False
    try:
        return importlib.util.find_spec(f"modules.{module}.commands") is not None
    except ModuleNotFoundError:  # no modules/<module> package at all
        return False


def conventional_modules() -> list[str]:
    """Every package under modules/ with a commands.py: the modules this checkout can run.
    Found by where the `modules` package lies, not by importing it: common depends on no module."""
    spec = importlib.util.find_spec("modules")
    if spec is None or not spec.submodule_search_locations:
        return []
    return sorted(info.name for info in pkgutil.iter_modules(spec.submodule_search_locations)
                  if info.ispkg and has_conventional_registry(info.name))  # fmt: skip


def module_hooks(name: str) -> list[Any]:
    """What the modules offer under `name` in their `modules.<module>.hooks:HOOKS`, in the
    modules' name order."""
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


def module_hook(name: str) -> Any:
    """The one thing a module offers under `name` (the inventory: only the resource module has
    one). LookupError when no module, or more than one, offers it: a checkout without that
    module cannot serve what needs it."""
    found = module_hooks(name)
    if len(found) != 1:
        offered = "no module offers" if not found else f"{len(found)} modules offer"
        raise LookupError(f"{offered} the {name!r} hook (modules/<name>/hooks.py)")
    return found[0]
