"""A plug-in's folder declares its document fields (common/engine/core/declared.py): a kind's
`STEP_PART`, a gate's `TASK_PART`, found by folder in the folders' order, those listed by name
left out; the approval kind's step fields are found so."""

from __future__ import annotations

import sys

from common.engine.core.declared import declared_parts
from common.engine.core.step_doc import STEP_PARTS
from common.engine.kinds.approve.fields import ApproveFields


def test_each_folders_part_is_found_in_order_but_those_listed(tmp_path, monkeypatch):
    package = tmp_path / "planted_plugins"
    for folder, body in (("b_gate", "TASK_PART = 'b'\n"), ("a_gate", "TASK_PART = 'a'\n"), ("c_gate", "OTHER = 1\n"),
                         ("d_gate", None)):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
        if body is not None:
            (package / folder / "fields.py").write_text(body)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert declared_parts("planted_plugins", "TASK_PART") == ("a", "b")
        assert declared_parts("planted_plugins", "TASK_PART", listed=("a",)) == ("b",)
    finally:
        for name in [n for n in sys.modules if n.startswith("planted_plugins")]:
            del sys.modules[name]


def test_the_approval_kinds_fields_are_found_by_its_folder():
    assert STEP_PARTS[0] is ApproveFields


def test_the_engines_face_offers_what_each_plug_ins_face_declares():
    from common.engine import changes, document, views
    from common.engine.core.declared import _faces
    from common.engine.gates.rate import face as rate_face

    assert rate_face in _faces()
    for public, attribute in ((document, "DOCUMENT"), (changes, "CHANGES"), (views, "VIEWS")):
        for home, names in getattr(rate_face, attribute).items():
            assert public.EXPORTS[home] == names
            assert all(getattr(public, name) is getattr(sys.modules[home], name) for name in names)
    # Every plug-in folder's face names only its own modules: a folder offers nothing of another.
    for face in _faces():
        folder = face.__name__.rpartition(".")[0]
        offered = {home for attribute in ("DOCUMENT", "CHANGES", "VIEWS") for home in getattr(face, attribute, {})}
        assert offered and all(home.startswith(folder + ".") for home in offered)
