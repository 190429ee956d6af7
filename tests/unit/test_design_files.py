"""docs/design/engine-files.md, "The files today", lists every module of common/engine/ and
common/relay/: a file added, moved or removed without the design saying so fails here, and so
does a listed file that is gone."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def listed() -> set[str]:
    design = (ROOT / "docs" / "design" / "engine-files.md").read_text()
    section = design.split("## The files today", 1)[1]
    return {f"common/{name}" for name in re.findall(r"`((?:engine|relay)/[\w/]+\.py)`", section)}


def on_disk() -> set[str]:
    found = set()
    for package in ("common/engine", "common/relay"):
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py":
                found.add(path.relative_to(ROOT).as_posix())
    return found


def test_the_design_lists_every_engine_and_relay_module() -> None:
    assert on_disk() - listed() == set(), "files the design does not list (docs/design/engine-files.md)"


def test_every_module_the_design_lists_exists() -> None:
    assert listed() - on_disk() == set(), "files the design lists that are gone"
