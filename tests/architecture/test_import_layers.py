"""The layers of docs/DESIGN.md, enforced: `common` imports nothing of `oss` or `modules`, a
module imports neither `oss` nor another module, only the adapters import pika and pymongo, and
the engine has no import cycle. The checker itself is shown to catch a planted breach."""

from __future__ import annotations

from pathlib import Path

from tests.architecture.import_graph import cycles, import_graph, layer_breaches

ROOT = Path(__file__).resolve().parents[2]


# Breaches not yet moved behind a module hook: each must still be real (the last test), and the
# list only ever shrinks.
KNOWN: set[tuple[str, str]] = set()  # breaches accepted for now: none


def test_the_project_keeps_its_layers():
    breaches = [b for b in layer_breaches(import_graph(ROOT)) if (b.importer, b.rule) not in KNOWN]
    assert not breaches, "\n".join(map(str, breaches))


def test_every_known_breach_is_still_real():
    found = {(b.importer, b.rule) for b in layer_breaches(import_graph(ROOT))}
    assert KNOWN <= found, f"fixed, so drop from KNOWN: {sorted(KNOWN - found)}"


def test_common_has_no_import_cycle():
    found = cycles(import_graph(ROOT), "common")
    assert not found, "\n".join(" -> ".join(cycle) for cycle in found)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in ("common", "oss", "modules"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").touch()
    return tmp_path


def test_a_planted_breach_of_each_rule_is_named(tmp_path):
    root = _tree(tmp_path, {
        "common/engine/__init__.py": "",
        "common/engine/routing.py": "def plan():\n    from oss.api import app  # hidden in a function\n",
        "common/store/sqlite.py": "import pymongo\n",
        "modules/mysql/__init__.py": "",
        "modules/mysql/commands.py": "from modules.resource import inventory\nfrom oss import cli\n",
        "modules/resource/__init__.py": "",
        "modules/resource/inventory/__init__.py": "",
        "modules/resource/inventory/mongo.py": "import pymongo\n",  # a module's own store adapter
        "modules/resource/commands.py": "import pymongo\n",
        "oss/cli.py": "import modules.mysql.commands\n",
        "oss/api.py": "",
    })
    rules = {(b.importer, b.rule) for b in layer_breaches(import_graph(root))}
    assert ("common.engine.routing", "common imports nothing of oss or modules") in rules
    assert ("common.store.sqlite", "only the adapters import pymongo") in rules
    assert ("modules.mysql.commands", "a module never imports another module") in rules
    assert ("modules.mysql.commands", "a module never imports oss") in rules
    assert ("oss.cli", "oss reaches a module through its hook, not an import") in rules
    assert ("modules.resource.commands", "only the adapters import pymongo") in rules
    assert not any(importer == "modules.resource.inventory.mongo" for importer, _ in rules)


def test_a_planted_cycle_is_named_even_through_a_function_local_import(tmp_path):
    root = _tree(tmp_path, {
        "common/advance.py": "from common.locks import release\n",
        "common/locks.py": "def grant():\n    from common.advance import advance\n",
        "common/typing_only.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from common.advance import x\n",
    })
    found = cycles(import_graph(root), "common")
    assert any({"common.advance", "common.locks"} <= set(cycle) for cycle in found)
    assert not any("common.typing_only" in cycle for cycle in found)


def test_an_import_only_for_type_checking_is_no_breach(tmp_path):
    root = _tree(tmp_path, {"common/views.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import oss.api\n"})
    assert layer_breaches(import_graph(root)) == []
