"""Flow versions: the content hash changes with what a task runs and with nothing else, every
task (and a sub-flow's child) records the revision it was created from, and `baton flows diff`
and `baton flows versions` say what changed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from common.flows.loader import parse_flows
from common.flows.versions import diff_catalogs
from oss.cli import main

BASE = """
version: 1
task_types:
  make:
    description: Makes a thing.
    version: "3"
    parameters:
      name: {type: string, required: true}
    steps:
      - name: reserve
        normal:   {module: resource, command: noop, timeout: 10}
        rollback: {module: resource, command: noop_rollback}
      - name: build
        normal: {module: mysql, command: noop}
  outer:
    steps:
      - name: child
        flow: make
        inputs: {name: name}
"""


def catalog(text: str):
    return parse_flows(text, "flows.yaml")


def hashes(text: str) -> dict[str, str]:
    return {name: d.content_hash for name, d in catalog(text).task_types.items()}


def test_the_hash_ignores_descriptions_comments_and_layout_but_not_behaviour():
    base = hashes(BASE)
    assert base["make"].startswith("sha256:") and len(base["make"]) == len("sha256:") + 16
    cosmetic = BASE.replace("Makes a thing.", "Makes a thing, well.").replace("steps:\n      - name: reserve",
                                                                             "steps:  # the plan\n      - name: reserve")
    assert hashes(cosmetic) == base
    assert hashes(BASE.replace("timeout: 10", "timeout: 11"))["make"] != base["make"]
    assert hashes(BASE.replace("{type: string, required: true}", "{type: string}"))["make"] != base["make"]
    # A child's change is its parent's too: the parent's task copies the child's steps.
    changed = hashes(BASE.replace("command: noop}\n  outer", "command: noop, retry: 2}\n  outer"))
    assert changed["make"] != base["make"] and changed["outer"] != base["outer"]
    # The label alone does not change the hash.
    assert hashes(BASE.replace('version: "3"', 'version: "4"')) == base


def test_a_bad_version_label_names_its_line_and_path():
    try:
        catalog(BASE.replace('version: "3"', 'version: "no spaces allowed"'))
    except Exception as exc:  # noqa: BLE001  (the loader's FlowError)
        text = str(exc)
    else:
        raise AssertionError("the loader took a bad version label")
    assert "flows.yaml:6" in text and "task_types.make.version" in text


def test_diff_names_each_changed_type_and_step():
    new = BASE.replace("timeout: 10", "timeout: 30").replace('version: "3"', 'version: "4"') + """
  other:
    steps:
      - name: only
        normal: {module: monitor, command: noop}
"""
    lines = diff_catalogs(catalog(BASE), catalog(new))
    assert lines[0].startswith("~ make: version 3, sha256:") and "-> version 4, sha256:" in lines[0]
    assert "    ~ step reserve: NormalTimeout" in lines
    assert any(line.startswith("+ other: new task type") for line in lines)
    assert any(line.startswith("~ outer: ") for line in lines) and "    ~ step child: FlowTemplate" in lines
    assert diff_catalogs(catalog(BASE), catalog(BASE)) == []


def test_tasks_and_their_children_record_the_revision_and_the_cli_shows_it(tmp_path):
    flows = tmp_path / "flows.yaml"
    flows.write_text(BASE)
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'v.db'}", "BATON_BROKER_URL": "memory://",
           "BATON_FLOWS_PATH": str(flows)}  # fmt: skip
    runner = CliRunner()
    created = runner.invoke(main, ["submit", "outer", "name=x", "--json"], env=env)
    assert created.exit_code == 0, created.output
    task = json.loads(created.stdout)
    expected = hashes(BASE)
    assert (task["FlowHash"], task["FlowVersion"]) == (expected["outer"], None)
    template = task["Steps"][0]["FlowTemplate"]
    assert (template["FlowHash"], template["FlowVersion"]) == (expected["make"], "3")
    shown = runner.invoke(main, ["get", task["TaskId"]], env=env)
    assert f"flow version: {expected['outer']}" in shown.stdout

    listed = runner.invoke(main, ["flows", "versions", "--json"], env=env)
    assert {r["task_type"]: (r["version"], r["hash"]) for r in json.loads(listed.stdout)} == {
        "make": ("3", expected["make"]), "outer": (None, expected["outer"])}  # fmt: skip
    newer = tmp_path / "newer.yaml"
    newer.write_text(BASE.replace("timeout: 10", "timeout: 20"))
    changed = runner.invoke(main, ["flows", "diff", str(newer)], env=env)
    assert changed.exit_code == 0 and "~ step reserve: NormalTimeout" in changed.stdout
    assert runner.invoke(main, ["flows", "diff", str(flows), str(flows)], env=env).stdout == "no task type changed\n"


def test_the_docs_diff_example_is_what_baton_prints(tmp_path):
    """docs/flow-versions.md's diff: the repository's flows.yaml with init_instance's timeout
    raised from 120 to 300 s. The hashes follow flows.yaml, so they are compared as shapes."""
    repo = Path(__file__).resolve().parents[2]
    doc = (repo / "docs" / "flow-versions.md").read_text()
    shown = re.search(r"```text\n(.*?)```", doc, re.S).group(1)
    text = (repo / "flows.yaml").read_text()
    step = text.index("command: init_instance")
    newer = tmp_path / "new-flows.yaml"
    newer.write_text(text[:step] + text[step:].replace("timeout: 120", "timeout: 300", 1))
    result = CliRunner().invoke(main, ["flows", "diff", str(repo / "flows.yaml"), str(newer)])
    assert result.exit_code == 0, result.output
    hashed = re.compile(r"sha256:[0-9a-f]{16}")
    assert hashed.sub("sha256:H", result.stdout) == hashed.sub("sha256:H", shown)
