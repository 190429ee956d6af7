"""The module SDK's import paths of earlier releases, kept working for a deprecation period.

A module written against an earlier release imports what its docs named then
(`from common.engine.check_again import check_again`, `from common.store.port import TaskStore`);
those modules have moved since. Each old path here still imports, as the module (or, when its
names were split, the modules) holding the same names now, with a DeprecationWarning that names
the path to use instead. `common/__init__.py` installs the finder, so the first import of
anything under `common` makes every old path importable. The table is the whole list, and the
CHANGELOG names when the paths go.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

# old path -> the module(s) holding its names now, looked up in this order.
OLD_PATHS: dict[str, tuple[str, ...]] = {
    "common.check_again": ("common.engine.core.check_again",),
    "common.engine.check_again": ("common.engine.core.check_again",),
    "common.engine.transitions": ("common.engine.core.entries",),
    "common.engine.units": ("common.engine.core.units",),
    "common.models": ("common.engine.document",),
    "common.statuses": ("common.engine.states",),
    "common.masking": ("common.secrets.task_views", "common.secrets.documents", "common.secrets.values"),
    "common.store.port": ("common.store.tasks.port",),
    "common.store.mutate": ("common.store.tasks.mutate",),
    "common.store.task_filters": ("common.store.tasks.filters",),
    "common.store.events_port": ("common.store.side.events",),
    "common.store.sqlite_local": ("common.store.sqlite.connections",),
    "common.store.mongo_base": ("common.store.mongo.base",),
    "common.store.mongo_client": ("common.store.mongo.client",),
    "common.store.mongo_errors": ("common.store.mongo.errors",),
    "common.store.mongo_indexes": ("common.store.mongo.indexes",),
}
# Frames of the import machinery and of this file: the warning names the importer's line instead.
_MACHINERY = ("importlib", "<frozen importlib", __file__)


class _OldPathLoader(importlib.abc.Loader):
    def __init__(self, targets: Sequence[str]):
        self._targets = targets

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        modules = [importlib.import_module(name) for name in self._targets]
        warnings.warn(f"{spec.name} is deprecated: import from {' or '.join(self._targets)} instead",
                      DeprecationWarning, stacklevel=_importer_level())  # fmt: skip
        if len(modules) == 1:
            return modules[0]  # the very module: its classes and functions are the same objects
        return _merged(spec.name, modules)

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module(s) it stands for ran when imported."""


class OldPathFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        targets = OLD_PATHS.get(fullname)
        if targets is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _OldPathLoader(targets))


def install() -> None:
    """Make the old paths importable (once per process)."""
    if not any(isinstance(finder, OldPathFinder) for finder in sys.meta_path):
        sys.meta_path.append(OldPathFinder())  # last: a module that exists is always found first


def _merged(name: str, modules: list[types.ModuleType]) -> types.ModuleType:
    """A module whose names are those of `modules`, the first holding one winning."""
    merged = types.ModuleType(name, f"Deprecated: the names of {', '.join(m.__name__ for m in modules)}.")
    for module in reversed(modules):
        merged.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    return merged


def _importer_level() -> int:
    """warnings.warn's stacklevel for the line that imported the old path."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_MACHINERY):
        level, frame = level + 1, frame.f_back
    return level
