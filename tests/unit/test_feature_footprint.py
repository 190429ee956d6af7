"""tools/feature_footprint.py counts what it says: every feature's files exist where the tool
looks, and a file outside a feature is counted when it imports it, wires it by name or uses one
of its members of the shared tables, and not when it only mentions it in a docstring."""

from __future__ import annotations

from pathlib import Path

from tools import feature_footprint
from tools.feature_footprint import FEATURES, Feature, names_feature, own_files


def test_every_features_files_are_where_the_tool_looks() -> None:
    for name, feature in FEATURES.items():
        assert all((feature_footprint.ROOT / path).exists() for path in feature.paths), name
        assert own_files(feature), name


def test_an_import_a_wiring_string_and_a_member_count_and_a_docstring_does_not(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(feature_footprint, "ROOT", tmp_path)
    modules = {"common.store.gates.lock.relay"}
    members = ("OutboxKind.LOCK_ACQUIRE",)
    cases = {
        "imports.py": ("from common.store.gates.lock.relay import LockRelay\n", True),
        "lazy.py": ("def later():\n    from common.store.gates.lock import relay\n", True),
        "wires.py": ('RELAY = "common.store.gates.lock.relay:LockRelay"\n', True),
        "member.py": ("from common.engine.codes import OutboxKind\nKIND = OutboxKind.LOCK_ACQUIRE\n", True),
        "declares.py": ('class OutboxKind:\n    LOCK_ACQUIRE = "lock_acquire"\n', True),
        "mentions.py": ('"""Flushed by common.store.gates.lock.relay."""\n', False),
    }
    for name, (text, counted) in cases.items():
        path = tmp_path / "common" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        assert names_feature(path, modules, members) is counted, name


def test_the_table_prints_a_row_per_feature(capsys) -> None:
    feature_footprint.main(["lock", "rate"])
    rows = capsys.readouterr().out.splitlines()
    assert [row.split()[0] for row in rows[1:]] == ["lock", "rate"]
    assert isinstance(FEATURES["lock"], Feature)
