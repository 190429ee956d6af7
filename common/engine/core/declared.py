"""What the plug-ins' folders declare, found by folder so a new plug-in adds it without a line
outside its folder: a kind's step fields (`STEP_PART` in its `fields.py`), a gate's task fields
(`TASK_PART`; with `TASK_PART_PLACE`, its place among the parts stored documents first held), the names it offers the engine's face (`DOCUMENT`, `CHANGES`, `VIEWS` in its
`face.py`), a gate's modules beside its class that the core asks (`sweep.py`, `shown.py`), and
its members of the engine's shared tables (`declares.py`: its waits, outbox kinds, flushers and
run states, read by common.engine.codes, states and outbox as they are built)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

PLUG_INS = ("common.engine.kinds", "common.engine.gates")


def declared_parts(package: str, attribute: str, listed: tuple[Any, ...] = (), module: str = "fields") -> tuple[Any, ...]:
    """The `attribute` of each `<package>.<folder>.<module>` module that has one, in the folders'
    order, but for the parts `listed` already (named where the document is assembled)."""
    parts = []
    for found in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda m: m.name):
        name = f"{package}.{found.name}.{module}"
        if found.ispkg and importlib.util.find_spec(name) is not None:
            part = getattr(importlib.import_module(name), attribute, None)
            if part is not None and part not in listed:
                parts.append(part)
    return tuple(parts)


def composed(name: str, parts: tuple[Any, ...]) -> Any:
    """One document part made of `parts` (their fields in their order), or None when there is none:
    a kind's extensions' parts offered as the kind's own."""
    if len(parts) <= 1:
        return parts[0] if parts else None
    return type(name, tuple(reversed(parts)), {"__module__": parts[0].__module__})


def placed_parts(packages: tuple[str, ...], attribute: str, listed: tuple[Any, ...], module: str = "fields") -> tuple[Any, ...]:
    """A document's first parts, in the order stored documents hold their fields: `listed` (named
    where the document is assembled) at places 1, 2, ..., and the part of each folder of
    `packages` that declares its place (`<attribute>_PLACE` beside it) at that place, 0 before
    every listed one. ValueError naming both when two parts take one place."""
    placed: dict[float, Any] = dict(enumerate(listed, 1))
    owner: dict[float, str] = {place: part.__qualname__ for place, part in placed.items()}
    for package in packages:
        for found in sorted(pkgutil.iter_modules(importlib.import_module(package).__path__), key=lambda m: m.name):
            name = f"{package}.{found.name}.{module}"
            if not found.ispkg or importlib.util.find_spec(name) is None:
                continue
            declared_module = importlib.import_module(name)
            place = getattr(declared_module, f"{attribute}_PLACE", None)
            if place is None:
                continue
            if place in placed:
                raise ValueError(f"{attribute} place {place} is taken by {owner[place]} and by {name}")
            placed[place], owner[place] = getattr(declared_module, attribute), name
    return tuple(placed[place] for place in sorted(placed))


def beside(plug_ins: Iterable[object], module: str) -> tuple[ModuleType, ...]:
    """The `module` of each plug-in's folder that has one, in the plug-ins' order (a gate's
    `sweep.py`, its `shown.py`): the folder of the plug-in's class."""
    found = []
    for plug_in in plug_ins:
        name = f"{type(plug_in).__module__.rpartition('.')[0]}.{module}"
        if importlib.util.find_spec(name) is not None:
            found.append(importlib.import_module(name))
    return tuple(dict.fromkeys(found))  # two gates of one folder (a rate's) share it


def declared_exports(attribute: str) -> dict[str, tuple[str, ...]]:
    """What every plug-in's `face.py` offers one of the engine's public modules (`attribute`:
    `DOCUMENT`, `CHANGES` or `VIEWS`), as `{home module: (names...)}`: the kinds', then the gates'."""
    exports: dict[str, tuple[str, ...]] = {}
    for face in _faces():
        exports.update(getattr(face, attribute, {}))
    return exports


@cache
def _faces() -> tuple[ModuleType, ...]:
    """Every plug-in's `face.py`, a kind's extension's within its folder too (a for_each's
    waves), found once by a look at the folders (a reader such as `baton get` pays no more than
    listing the folders and importing these few small modules)."""
    return _found("face.py")


def _found(file: str) -> tuple[ModuleType, ...]:
    found = []
    for package in PLUG_INS:
        root = Path(importlib.import_module(package).__file__ or "").parent
        for path in sorted(root.rglob(file)):
            found.append(importlib.import_module(".".join((package, *path.relative_to(root).with_suffix("").parts))))
    return tuple(found)


def declared(attribute: str) -> dict[str, Any]:
    """Every plug-in's `declares.py`'s `attribute` (a mapping of member names) merged, the
    kinds' then the gates', in the folders' order. ValueError naming both folders when two
    declare one member: a member is one folder's."""
    return merged_declarations(attribute, _declarations())


def merged_declarations(attribute: str, modules: Iterable[ModuleType]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for module in modules:
        for member, value in getattr(module, attribute, {}).items():
            if member in merged:
                raise ValueError(f"{attribute} {member} is declared by {owner[member]} and by {module.__name__}")
            merged[member], owner[member] = value, module.__name__
    return merged


@cache
def _declarations() -> tuple[ModuleType, ...]:
    """Every plug-in folder's `declares.py`, a folder's within it too (a for_each's waves). Each
    imports nothing of the engine but common.engine.core.bodies: the shared tables are built from
    them before any other module of the engine can be imported."""
    return _found("declares.py")
