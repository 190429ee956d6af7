"""The engine's core, its operators and its public modules name no plug-in's folder
(docs/design/engine.md, docs/design/gates.md): they call the registry's hooks, and a kind's or
gate's fields, names and parts are found by folder. The pairs that remain are listed with why;
the list only shrinks, and the checker is shown to name a planted one."""

from __future__ import annotations

from pathlib import Path

from tests.architecture.import_graph import import_graph

ROOT = Path(__file__).resolve().parents[2]
PLUG_INS = ("common.engine.gates.", "common.engine.kinds.")
BASES = {"common.engine.gates.gate", "common.engine.kinds.kind"}  # the base classes are the core's
CALLERS = ("common.engine.core.", "common.engine.operator.")
PUBLIC = {f"common.engine.{name}" for name in ("document", "changes", "views", "commands", "states", "codes", "outbox")}

# (importer, plug-in folder) that remain, each for a reason of its own.
KNOWN = {
    # The documents' first parts, named in the order stored documents hold their fields (a part
    # added since is found by folder).
    ("common.engine.core.task_doc", "common.engine.gates.after_task"),
    ("common.engine.core.task_doc", "common.engine.gates.deadline"),
    ("common.engine.core.task_doc", "common.engine.gates.pause"),
    ("common.engine.core.task_doc", "common.engine.gates.start_at"),
    ("common.engine.core.task_doc", "common.engine.kinds.for_each"),
    ("common.engine.core.step_doc", "common.engine.kinds.command"),
    ("common.engine.core.step_doc", "common.engine.kinds.for_each"),
    ("common.engine.core.step_doc", "common.engine.kinds.sub_flow"),
    # A drained module's hold: its derived wait comes before any other, and a held run's recheck.
    ("common.engine.core.entries", "common.engine.gates.drain"),
    ("common.engine.core.parking", "common.engine.gates.drain"),
    # An item record's fencing token, and a held step's unit, are the for_each kind's.
    ("common.engine.core.fence", "common.engine.kinds.for_each"),
    ("common.engine.operator.hold", "common.engine.kinds.for_each"),
}


def folder_of(module: str) -> str | None:
    """The plug-in folder `module` is in (common.engine.gates.rate), or None."""
    if not module.startswith(PLUG_INS) or any(module == b or module.startswith(b + ".") for b in BASES):
        return None
    return ".".join(module.split(".")[:4])


def named_folders(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(importer, folder) for importer, targets in graph.items()
            if importer.startswith(CALLERS) or importer in PUBLIC
            for target in targets if (folder := folder_of(target)) is not None}


def test_the_core_names_no_plug_in_folder_but_those_listed():
    found = named_folders(import_graph(ROOT, ("common",)))
    assert found <= KNOWN, f"name no plug-in here (call the registry, declare it in its folder): {sorted(found - KNOWN)}"
    assert KNOWN <= found, f"no longer named, so drop from KNOWN: {sorted(KNOWN - found)}"
    assert not any(importer in PUBLIC for importer, _ in found)  # the face gathers them from each face.py


def test_the_public_modules_gather_plug_ins_names_from_their_folders():
    """`document`, `changes` and `views` name their homes as strings (imported on first use): none
    is a plug-in's; each folder's face.py offers its own."""
    for name in ("document", "changes", "views"):
        source = (ROOT / "common" / "engine" / f"{name}.py").read_text()
        homes = [word.strip('"') for word in source.split() if word.startswith('"common.engine.')]
        assert homes and not [home for home in homes if folder_of(home.rstrip('":,')) is not None], name


def test_a_planted_name_of_a_plug_in_is_found(tmp_path):
    for name, text in {
        "common/__init__.py": "",
        "common/engine/__init__.py": "",
        "common/engine/core/__init__.py": "",
        "common/engine/core/advance.py": "from common.engine.gates.rate.gate import RateGate\nfrom common.engine.gates.gate import Gate\n",
        "common/engine/changes.py": "def later():\n    from common.engine.kinds.approve import kind\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert named_folders(import_graph(tmp_path, ("common",))) == {
        ("common.engine.core.advance", "common.engine.gates.rate"),
        ("common.engine.changes", "common.engine.kinds.approve"),
    }
