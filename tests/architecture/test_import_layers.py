"""The layers of docs/design/engine.md, enforced: `common` imports nothing of `oss` or `modules`, a
module imports neither `oss` nor another module, only the adapters import pika and pymongo, the
engine has no import cycle, code outside the engine imports only its public modules, the engine
imports no store, broker, relay, runtime or settings, and no folder of `common` imports a floor
above its own. The checker itself is shown to catch a planted breach of each rule."""

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
    for package in ("common", "oss", "modules", "bench"):
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "__init__.py").touch()
    return tmp_path


def test_a_planted_breach_of_each_rule_is_named(tmp_path):
    root = _tree(tmp_path, {
        "common/engine/__init__.py": "",
        "common/engine/core/routing.py": "def plan():\n    from oss.api import app  # hidden in a function\n",
        "common/store/sqlite/tasks.py": "import pymongo\n",
        "common/store/side/mongo_locks.py": "import pymongo\n",  # named like one, outside mongo/
        "common/store/mongo/tasks.py": "import pymongo\n",  # the adapter: no breach
        "modules/mysql/__init__.py": "",
        "modules/mysql/commands.py": "from modules.resource import inventory\nfrom oss import cli\n",
        "modules/resource/__init__.py": "",
        "modules/resource/inventory/__init__.py": "",
        "modules/resource/inventory/mongo.py": "import pymongo\n",  # a module's own store adapter
        "modules/resource/commands.py": "import pymongo\n",
        "oss/cli/__init__.py": "import modules.mysql.commands\n",
        "oss/api.py": "",
    })
    rules = {(b.importer, b.rule) for b in layer_breaches(import_graph(root))}
    assert ("common.engine.core.routing", "common imports nothing of oss or modules") in rules
    assert ("common.store.sqlite.tasks", "only the adapters import pymongo") in rules
    assert ("common.store.side.mongo_locks", "only the adapters import pymongo") in rules
    assert not any(importer == "common.store.mongo.tasks" for importer, _ in rules)
    assert ("modules.mysql.commands", "a module never imports another module") in rules
    assert ("modules.mysql.commands", "a module never imports oss") in rules
    assert ("oss.cli", "oss reaches a module through its hook, not an import") in rules
    assert ("modules.resource.commands", "only the adapters import pymongo") in rules
    assert not any(importer == "modules.resource.inventory.mongo" for importer, _ in rules)


def test_a_planted_breach_of_each_engine_rule_is_named(tmp_path):
    root = _tree(tmp_path, {
        "common/engine/__init__.py": "",
        "common/engine/views.py": "",
        "common/engine/core/__init__.py": "",
        "common/engine/core/routing.py": "def plan():\n    import common.settings\n",
        "common/engine/core/advance.py": "from common.store.sqlite import SqliteStore\n",
        "common/engine/gates/__init__.py": "",
        "common/engine/gates/freeze/gate.py": "from common.relay.sweeper import Sweeper\n",
        "common/store/__init__.py": "",
        "common/store/sqlite/tasks.py": "from common.engine.views import keeps_records\n",  # the face: no breach
        "common/relay/__init__.py": "",
        "common/relay/sweeper.py": "from common.engine.core.routing import plan\n",
        "common/settings.py": "",
        "common/backoff.py": "from common.engine.document import BackoffPolicy\n",
        "common/newfolder/__init__.py": "",
        "common/newfolder/thing.py": "import common.errors\n",
        "common/errors.py": "",
        "common/engine/document.py": "",
        "oss/views.py": "from common.engine.gates.freeze.gate import utc_text\n",
        "bench/run.py": "from common.engine.core import routing\n",
    })
    rules = {(b.importer, b.rule) for b in layer_breaches(import_graph(root))}
    face = "outside code imports only the engine's public modules"
    assert ("common.relay.sweeper", face) in rules and ("oss.views", face) in rules and ("bench.run", face) in rules
    assert not any(importer == "common.store.sqlite.tasks" for importer, _ in rules)
    never = "the engine imports no store, broker, relay, runtime or settings"
    assert {("common.engine.core.routing", never), ("common.engine.core.advance", never),
            ("common.engine.gates.freeze.gate", never)} <= rules
    assert ("common.backoff", "no folder imports a floor above it (the engine)") in rules
    assert ("common.newfolder.thing", "every folder of common is placed on a floor (LAYERS)") in rules


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
