"""The import graph of the project's packages, read from the source (nothing is imported), and
the layering rules docs/DESIGN.md states (sec. 1 and 14), as a checker that names each breach.

Every import counts, a function-local one too (it hides a cycle rather than removing it); only
imports under `if TYPE_CHECKING:` are left out, since they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("common", "oss", "modules")
# Who may import a driver: its adapter, and nothing else.
def _rabbitmq_adapter(module: str) -> bool:
    return _within(module, "common.broker.rabbitmq")


def _mongo_adapter(module: str) -> bool:
    """A MongoDB adapter of the store, or of a module's own store (the resource inventory's)."""
    parts = module.split(".")
    own_store = parts[0] == "modules" and len(parts) > 3  # modules.<name>.<its store>.<adapter>
    return (module.startswith("common.store.") or own_store) and "mongo" in parts[-1]


DRIVERS = {"pika": _rabbitmq_adapter, "pymongo": _mongo_adapter, "bson": _mongo_adapter}


@dataclass(frozen=True)
class Breach:
    importer: str
    imported: str
    rule: str

    def __str__(self) -> str:
        return f"{self.importer} imports {self.imported}: {self.rule}"


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, importer: str, is_package: bool) -> Iterator[str]:
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = importer.split(".") if is_package else importer.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            # `from pkg import name`: name may be a submodule; keep both, the checker matches prefixes
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """module -> the modules (and names) it imports, for every .py file under `packages`."""
    graph: dict[str, set[str]] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "static" in path.parts:
                continue
            name = module_name(root, path)
            tree = ast.parse(path.read_text(), filename=str(path))
            graph[name] = set(_imports(tree, name, path.name == "__init__.py"))
    return graph


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer_breaches(graph: dict[str, set[str]]) -> list[Breach]:
    breaches = []
    for importer, imported in graph.items():
        for target in sorted(imported):
            top = target.split(".")[0]
            if _within(importer, "common") and top in ("oss", "modules"):
                breaches.append(Breach(importer, target, "common imports nothing of oss or modules"))
            if _within(importer, "oss") and top == "modules":
                breaches.append(Breach(importer, target, "oss reaches a module through its hook, not an import"))
            if _within(importer, "modules") and top == "oss":
                breaches.append(Breach(importer, target, "a module never imports oss"))
            if _within(importer, "modules") and top == "modules":
                own = ".".join(importer.split(".")[:2])
                if not _within(target, own) and target != "modules":
                    breaches.append(Breach(importer, target, "a module never imports another module"))
            if top in DRIVERS and not DRIVERS[top](importer):
                breaches.append(Breach(importer, target, f"only the adapters import {top}"))
    return breaches


def cycles(graph: dict[str, set[str]], within: str) -> list[list[str]]:
    """The import cycles among the modules under `within` (each once, as a path)."""
    nodes = {n for n in graph if _within(n, within)}
    edges = {n: {t for t in graph[n] if t in nodes and t != n} for n in nodes}
    found, state, path = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = "done"

    for node in sorted(nodes):
        if node not in state:
            visit(node)
    return found
