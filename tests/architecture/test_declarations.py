"""A plug-in declares its members of the engine's shared tables in its folder (docs/design/engine.md,
"What a plug-in declares"): its waits, outbox kinds (with their bodies and flushers) and run states
are in its `declares.py`, which imports nothing of the engine (the tables are built from them
before anything else of the engine exists, and `baton get` reads them without pydantic: a body is
named, "module:Class", and imported by common.engine.outbox); the shared tables' modules name
no plug-in's member; a member is one folder's; the stored waits stand in the registry's order of
the gates. Each checker is shown to name a planted breach."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from common.engine.codes import DERIVED_WAITS, WaitKind
from common.engine.core.declared import _declarations, merged_declarations
from common.engine.registry import GATES
from tests.architecture.import_graph import import_graph

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("common/engine/codes.py", "common/engine/states.py", "common/engine/outbox.py")


def declares_breaches(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(declares module, engine module it imports) for every import of the engine."""
    return {(importer, target) for importer, targets in graph.items() if importer.endswith(".declares")
            for target in targets if target.startswith("common.engine")}


def declared_values() -> set[str]:
    """Every stored string a plug-in declares: its waits', outbox kinds', flushers', run states'."""
    values: set[str] = set()
    for module in _declarations():
        for attribute in ("WAITS", "OUTBOX_KINDS", "RUN_STATES"):
            values |= {row[0] for row in getattr(module, attribute, {}).values()}
        for attribute in ("DERIVED_WAITS", "FLUSHERS"):
            values |= set(getattr(module, attribute, {}).values())
    return values


def members_named(source: str, values: set[str]) -> set[str]:
    """The plug-ins' members a shared table's module spells out itself (as a string constant)."""
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values}


def test_a_declares_module_imports_nothing_of_the_engine():
    assert declares_breaches(import_graph(ROOT, ("common",))) == set()


def test_a_planted_engine_import_in_a_declares_module_is_named(tmp_path):
    for name, text in {
        "common/__init__.py": "",
        "common/engine/gates/lock/declares.py": "from common.engine.codes import OutboxKind\n",
        "common/engine/gates/lock/bodies.py": "from common.engine.core.bodies import Body\n",  # a body may
        "common/engine/kinds/for_each/waves/declares.py": "def later():\n    from common.engine.kinds.for_each import bodies\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert declares_breaches(import_graph(tmp_path, ("common",))) == {
        ("common.engine.gates.lock.declares", "common.engine.codes"),
        ("common.engine.gates.lock.declares", "common.engine.codes.OutboxKind"),
        ("common.engine.kinds.for_each.waves.declares", "common.engine.kinds.for_each"),
        ("common.engine.kinds.for_each.waves.declares", "common.engine.kinds.for_each.bodies"),
    }


def test_the_shared_tables_name_no_plug_ins_member():
    values = declared_values()
    assert {"lock_acquire", "waiting_rate", "freeze", "locks", "drain"} <= values  # found by folder
    for table in TABLES:
        assert members_named((ROOT / table).read_text(), values) == set(), table


def test_a_planted_member_in_a_shared_table_is_named():
    planted = 'OutboxKind = StrEnum("OutboxKind", [("PUBLISH", "publish"), ("LOCK_ACQUIRE", "lock_acquire")])\n'
    assert members_named(planted, declared_values()) == {"lock_acquire"}


def test_a_member_declared_by_two_folders_is_named():
    one = SimpleNamespace(__name__="common.engine.gates.lock.declares", WAITS={"LOCK": ("lock", 30)})
    two = SimpleNamespace(__name__="common.engine.gates.step_lock.declares", WAITS={"LOCK": ("lock", 35)})
    with pytest.raises(ValueError, match="WAITS LOCK is declared by common.engine.gates.lock.declares and by "
                                         "common.engine.gates.step_lock.declares"):
        merged_declarations("WAITS", [one, two])


def test_the_stored_waits_stand_in_the_registrys_order_of_the_gates():
    stored = [kind for kind in WaitKind if kind not in DERIVED_WAITS]
    assert stored == [gate.wait_kind for gate in GATES if gate.wait_kind in stored]
    assert list(WaitKind)[len(stored):] == [kind for kind in WaitKind if kind in DERIVED_WAITS]  # shown ones last


def test_the_registry_finds_every_gate_class_by_its_folders_declaration():
    """A gate's folder names its class in declares.py: the registry imports none by name."""
    classes = set()
    for path in (ROOT / "common" / "engine" / "gates").rglob("*.py"):
        tree = ast.parse(path.read_text())
        classes |= {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                    and any(isinstance(b, ast.Name) and b.id.endswith("Gate") for b in node.bases)}
    classes -= {"TaskWaitGate"}  # a base of gates, not one
    assert {type(gate).__name__ for gate in GATES} == classes
    named = import_graph(ROOT, ("common",))["common.engine.registry"]
    assert not [m for m in named if m.startswith("common.engine.gates.") and not m.startswith("common.engine.gates.gate")]


def test_a_gate_declared_twice_at_one_place_or_under_another_name_is_refused():
    from common.engine.registry import declared_gates

    freeze, pause = "common.engine.gates.freeze.gate:FreezeGate", "common.engine.gates.pause.gate:PauseGate"
    assert [g.name for g in declared_gates({"pause": (pause, 5), "freeze": (freeze, 10)})] == ["pause", "freeze"]
    with pytest.raises(ValueError, match="gates freeze and pause are both declared at place 10"):
        declared_gates({"freeze": (freeze, 10), "pause": (pause, 10)})
    with pytest.raises(ValueError, match="declared as gate 'halt' but names itself 'pause'"):
        declared_gates({"halt": (pause, 10)})


def test_the_registry_finds_every_kind_class_by_its_folders_declaration():
    """A kind's folder names its class in declares.py: the registry imports none by name, and
    each kind stands at its place (flows.yaml's keys declare a step's kind in this order)."""
    from common.engine.kinds.kind import StepKind
    from common.engine.registry import KINDS

    classes = set()
    for path in (ROOT / "common" / "engine" / "kinds").rglob("kind.py"):
        tree = ast.parse(path.read_text())
        classes |= {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                    and any(isinstance(b, ast.Name) and b.id == StepKind.__name__ for b in node.bases)}
    assert {type(kind).__name__ for kind in KINDS.values()} == classes
    assert list(KINDS) == ["command", "for_each", "sub_flow", "approve"]
    named = import_graph(ROOT, ("common",))["common.engine.registry"]
    assert not [m for m in named if m.startswith("common.engine.kinds.") and not m.startswith("common.engine.kinds.kind")]


def test_a_kind_declared_by_two_folders_at_one_place_or_under_another_name_is_refused():
    from common.engine.registry import declared_kinds

    command, approve = "common.engine.kinds.command.kind:CommandKind", "common.engine.kinds.approve.kind:ApproveKind"
    one = SimpleNamespace(__name__="common.engine.kinds.command.declares", KINDS={"command": (command, 10)})
    two = SimpleNamespace(__name__="common.engine.kinds.shell.declares", KINDS={"command": (command, 15)})
    with pytest.raises(ValueError, match="KINDS command is declared by common.engine.kinds.command.declares and by "
                                         "common.engine.kinds.shell.declares"):
        merged_declarations("KINDS", [one, two])
    assert list(declared_kinds({"approve": (approve, 5), "command": (command, 10)})) == ["approve", "command"]
    with pytest.raises(ValueError, match="kinds command and approve are both declared at place 10"):
        declared_kinds({"command": (command, 10), "approve": (approve, 10)})
    with pytest.raises(ValueError, match="declared as kind 'shell' but names itself 'command'"):
        declared_kinds({"shell": (command, 10)})


def test_a_part_placed_among_the_first_stands_at_its_place_and_two_at_one_are_refused(tmp_path, monkeypatch):
    """A folder places its part among a document's first parts (`TASK_PART_PLACE`): the stored
    order holds without a line outside its folder."""
    from common.engine.core.declared import placed_parts

    for package, folder, place in (("planted", "one", 3), ("planted", "two", 0), ("clash", "three", 1)):
        (tmp_path / package / folder).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / folder / "__init__.py").write_text("")
        (tmp_path / package / folder / "fields.py").write_text(f"TASK_PART = {folder!r}\nTASK_PART_PLACE = {place}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert placed_parts(("planted",), "TASK_PART", (str, int)) == ("two", str, int, "one")
    with pytest.raises(ValueError, match="TASK_PART place 1 is taken by str and by clash.three.fields"):
        placed_parts(("clash",), "TASK_PART", (str, int))
