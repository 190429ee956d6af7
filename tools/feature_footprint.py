"""How far a feature reaches outside its folder: for each feature, the product files (common/,
oss/, modules/, client/baton_client/) outside the feature's own files that name it.

A file names a feature when it imports one of the feature's modules (a function-local import
too), names one of them as text ("common.store.gates.rate.sqlite:SqliteRateStore"), or uses one
of the members the feature owns in the engine's shared tables (`WaitKind.RATE`,
`OutboxKind.RATE_TAKE`). A feature's own files are its folders, and any file of it that still
lives elsewhere (listed in FEATURES, so the count says where the feature stands today).

    python -m tools.feature_footprint            # a table: feature, outside files
    python -m tools.feature_footprint -v lock    # and the files themselves

Docs and tests are not counted: a feature is expected to be documented and tested elsewhere.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("common", "oss", "modules", "client/baton_client")


@dataclass(frozen=True)
class Feature:
    paths: tuple[str, ...]  # its folders and files, relative to the root
    members: tuple[str, ...] = ()  # what it owns in the shared tables, as "Table.MEMBER"


FEATURES: dict[str, Feature] = {
    "callbacks": Feature(("common/engine/kinds/command/callback",)),
    "waves": Feature(("common/engine/kinds/for_each/waves",), ("OutboxKind.WAVE_GATE",)),
    "source": Feature(("common/engine/kinds/for_each/source",)),
    "rate": Feature(("common/engine/gates/rate", "common/store/gates/rate"),
                    ("WaitKind.RATE", "OutboxKind.RATE_TAKE", "Flusher.RATES", "RunState.WAITING_RATE")),
    "approve": Feature(("common/engine/kinds/approve",)),
    "lock": Feature(("common/engine/gates/lock", "common/store/gates/lock"),
                    ("WaitKind.LOCK", "OutboxKind.LOCK_ACQUIRE", "OutboxKind.LOCK_RELEASE", "Flusher.LOCKS")),
}


def module_of(path: Path) -> str:
    """The dotted module a product file is imported as."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[:1] == ["client"]:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def product_files() -> Iterator[Path]:
    for top in PRODUCT:
        yield from sorted(p for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts)


def own_files(feature: Feature) -> set[Path]:
    own: set[Path] = set()
    for rel in feature.paths:
        path = ROOT / rel
        own |= set(path.rglob("*.py")) if path.is_dir() else ({path} if path.exists() else set())
    return own


def imported(tree: ast.AST, module: str) -> Iterator[str]:
    """Every module `tree` imports, relative imports resolved against `module`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")[: len(module.split(".")) - node.level]
                base = ".".join([*package, base] if base else package)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def strings(tree: ast.AST) -> Iterator[str]:
    """Its string constants, docstrings left out (they describe, they do not wire)."""
    docs = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    return (node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs)


def attributes(tree: ast.AST) -> Iterator[str]:
    """Every `Name.attr` it reads ("WaitKind.RATE"), and every member a class of it declares
    (`class WaitKind: RATE = "rate"`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            yield f"{node.value.id}.{node.attr}"
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.Assign):
                    yield from (f"{node.name}.{t.id}" for t in statement.targets if isinstance(t, ast.Name))


def names_feature(path: Path, modules: set[str], members: tuple[str, ...]) -> bool:
    tree = ast.parse(path.read_text())
    module = module_of(path)
    if any(name == own or name.startswith(own + ".") for name in imported(tree, module) for own in modules):
        return True
    if any(re.search(rf"\b{re.escape(own)}\b", text) for text in strings(tree) for own in modules if "." in own):
        return True
    return not set(members).isdisjoint(attributes(tree))


def outside_files(feature: Feature) -> list[Path]:
    own = own_files(feature)
    modules = {module_of(path) for path in own}
    return [path for path in product_files() if path not in own and names_feature(path, modules, feature.members)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("features", nargs="*", help=f"of {', '.join(FEATURES)} (all when none)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the outside files")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.features) - set(FEATURES))
    if unknown:
        parser.error(f"unknown feature {', '.join(unknown)} (known: {', '.join(FEATURES)})")
    print(f"{'feature':<10} {'own files':>9} {'outside files naming it':>24}")
    for name in args.features or FEATURES:
        feature = FEATURES[name]
        outside = outside_files(feature)
        print(f"{name:<10} {len(own_files(feature)):>9} {len(outside):>24}")
        if args.verbose:
            for path in outside:
                print(f"    {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
