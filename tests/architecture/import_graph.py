"""The import graph of the project's packages, read from the source (nothing is imported), and
the layering rules docs/design/overview.md and docs/design/engine.md state, as a checker that names
each breach.

Every import counts, a function-local one too (it hides a cycle rather than removing it); only
imports under `if TYPE_CHECKING:` are left out, since they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("common", "oss", "modules", "bench", "tools")
PRODUCT = ("common", "oss", "modules")  # what ships (bench and tools measure and document it)
# The engine's public modules (docs/design/engine.md): product code outside common/engine imports
# only these; everything else of the engine is private (tests may import anything).
ENGINE = "common.engine"
ENGINE_FACE = frozenset({"document", "states", "codes", "outbox", "registry", "changes", "views", "commands"})
# What the engine never imports: it is pure, and is handed what it needs.
ENGINE_NEVER = ("common.store", "common.broker", "common.relay", "common.runtime", "common.settings", "common.config_sources")
# The floors of `common`, lowest first: a folder (or top-level module) imports nothing of a floor
# above its own. A new folder of `common` is placed here (an unplaced one is itself a breach). A
# module of a folder may stand on a floor of its own, named in full (the most precise name wins):
# tracing's trace context, current step span and tracer state are below everything, its spans above the engine; the
# secrets' task views (a task as shown) are above the engine, the rest of the secrets below it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundations", (
        "common", "common.access", "common.background", "common.backoff", "common.cron", "common.errors", "common.exports",
        "common.handoff", "common.input_limits", "common.instance_names", "common.logging", "common.metrics",
        "common.module_hooks", "common.old_paths", "common.queues", "common.reserved", "common.schedule_policies", "common.scheduling",
        "common.secrets", "common.spec", "common.stop_signals",
        "common.tracing.carrier", "common.tracing.current_step", "common.tracing.log_fields", "common.tracing.state",
    )),
    ("the engine", ("common.engine",)),
    ("flows, stores, broker, views, settings", (
        "common.broker", "common.config_sources", "common.flows", "common.secrets.task_views", "common.settings", "common.store",
        "common.tracing",
    )),
    ("relays", ("common.relay",)),
    ("the module runtime", ("common.runtime",)),
)
# Who may import a driver: its adapter, and nothing else.
def _rabbitmq_adapter(module: str) -> bool:
    return _within(module, "common.broker.rabbitmq")


def _mongo_adapter(module: str) -> bool:
    """The store's MongoDB adapters (common/store/mongo/), or a module's own store's (the
    resource inventory's)."""
    parts = module.split(".")
    own_store = parts[0] == "modules" and len(parts) > 3  # modules.<name>.<its store>.<adapter>
    return _within(module, "common.store.mongo") or (own_store and "mongo" in parts[-1])


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


def floor_of(module: str) -> int | None:
    """The floor of a module of `common`: its own when LAYERS names it, else its folder's (or its
    own when it is a top-level module)."""
    placed = {name: n for n, (_, names) in enumerate(LAYERS) for name in names}
    if module in placed:
        return placed[module]
    parts = module.split(".")
    return placed.get(".".join(parts[:2]) if len(parts) > 1 else module)


def engine_breaches(importer: str, target: str, known: set[str]) -> list[Breach]:
    """The engine's face and its floor; `known`: the project's modules (a target that is a name
    imported from a module, not a module, is judged by its module)."""
    breaches = []
    inside = _within(importer, ENGINE)
    if not inside and _within(target, ENGINE) and target != ENGINE and not importer.startswith("tests"):
        if target.split(".")[2] not in ENGINE_FACE:
            breaches.append(Breach(importer, target, "outside code imports only the engine's public modules"))
    if inside and any(_within(target, never) for never in ENGINE_NEVER):
        breaches.append(Breach(importer, target, "the engine imports no store, broker, relay, runtime or settings"))
    module = target if target in known else target.rsplit(".", 1)[0]
    package = any(name.startswith(module + ".") for name in known)  # `from pkg import mod`: judged by mod
    if _within(importer, "common") and _within(target, "common") and module in known and not package:
        mine, theirs = floor_of(importer), floor_of(module)
        if mine is None:
            breaches.append(Breach(importer, target, "every folder of common is placed on a floor (LAYERS)"))
        elif theirs is not None and theirs > mine:
            breaches.append(Breach(importer, target, f"no folder imports a floor above it ({LAYERS[theirs][0]})"))
    return breaches


def layer_breaches(graph: dict[str, set[str]]) -> list[Breach]:
    breaches = []
    known = set(graph)
    for importer, imported in graph.items():
        for target in sorted(imported):
            breaches += engine_breaches(importer, target, known)
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
            if top in DRIVERS and importer.split(".")[0] in PRODUCT and not DRIVERS[top](importer):
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
