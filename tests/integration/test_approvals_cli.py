"""`baton act`, `baton approve` and `baton reject` through click's runner on a temporary SQLite
store: who and why in the step and the history, `baton get`'s waiting line, and the exit codes
of what they refuse (3: no such task, step or action; 4: a second decision, a step that waits
no more)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from common.store.sqlite.tasks import SqliteStore
from oss.cli import main

FLOWS = """
version: 1
task_types:
  guarded:
    steps:
      - name: ask
        approve: {count: 2, timeout: 1h}
      - name: work
        normal: {module: resource, command: check_resource}
"""


@pytest.fixture
def cli(tmp_path: Any):
    flows = tmp_path / "flows.yaml"
    flows.write_text(FLOWS)
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_FLOWS_PATH": str(flows),
           "BATON_BROKER_URL": f"memory://cli-{uuid.uuid4().hex}"}
    store = SqliteStore(tmp_path / "baton.db")

    def run(*args: str):
        return CliRunner().invoke(main, list(args), env=env)

    yield run, store
    store.close()


def test_approve_and_reject_from_the_command_line(cli) -> None:
    run, store = cli
    planned = run("submit", "guarded", "--plan")
    assert planned.exit_code == 0 and "approval: 0/2 by operator" in planned.output, planned.output
    created = run("submit", "guarded", "--json")
    assert created.exit_code == 0, created.output
    task_id = json.loads(created.stdout)["TaskId"]
    shown = run("get", task_id)
    assert "waiting for step ask: 2 more approvals by operator" in shown.output, shown.output
    assert "items" not in shown.output  # its approvals are not items

    assert run("approve", task_id, "ask", "--reason", "ok", "--as", "ann").exit_code == 0
    assert "items" not in run("get", task_id).output
    again = run("act", task_id, "0", "reject", "--reason", "changed my mind", "--as", "ann")
    assert again.exit_code == 4 and "decided already" in again.output
    assert run("act", task_id, "nope", "approve", "--reason", "x").exit_code == 3
    assert run("act", task_id, "ask", "bless", "--reason", "x").exit_code == 3
    assert run("approve", "no-such-task", "ask", "--reason", "x").exit_code == 3
    assert run("approve", task_id, "ask", "--reason", " ").exit_code == 2

    second = run("approve", task_id, "ask", "--reason", "looked at the diff", "--as", "bo", "--json")
    assert second.exit_code == 0, second.output
    task = store.get(task_id)
    assert [(d.Actor, d.Reason) for d in task.Steps[0].Decisions] == [("ann", "ok"), ("bo", "looked at the diff")]
    assert task.Steps[0].State == "succeeded" and task.Runs[0].Cursor == 1  # the next step was dispatched
    late = run("reject", task_id, "ask", "--reason", "too late", "--as", "cy")
    assert late.exit_code == 4 and "waits for no reject" in late.output


def test_a_rejected_step_reads_rejected_in_baton_get(cli) -> None:
    run, store = cli
    task_id = json.loads(run("submit", "guarded", "--json").stdout)["TaskId"]
    assert run("reject", task_id, "ask", "--reason", "not during the sale", "--as", "ann").exit_code == 0
    line = next(line for line in run("get", task_id).output.splitlines() if "] ask " in line)
    assert line.split()[2] == "rejected", line  # stored `skipped` once the rollback passed it
    assert store.get(task_id).Steps[0].State == "skipped"


@pytest.mark.parametrize("actor", ["", "   ", " ann", "\x1b[31mann", "ann\u202e"])
def test_who_acts_is_a_name_a_blank_or_hidden_one_is_refused_and_nothing_is_recorded(cli, actor: str) -> None:
    # `--as` is the person an approval counts: a blank name, or one that differs from another only by
    # spaces or invisible characters, would let one person count twice; an escape would drive the
    # terminal of whoever reads the history. Every action that records who acted refuses it alike.
    run, store = cli
    task_id = json.loads(run("submit", "guarded", "--json").stdout)["TaskId"]
    assert run("approve", task_id, "ask", "--reason", "ok", "--as", "ann").exit_code == 0
    version = store.get(task_id).Version
    for args in (("approve", task_id, "ask"), ("act", task_id, "ask", "reject"), ("pause", task_id),
                 ("bulk", "cancel", "--type", "guarded", "--apply"), ("bulk", "cancel", "--type", "guarded"),
                 ("migrate", "--type", "guarded", "--to", store.get(task_id).FlowHash, "--apply")):
        refused = run(*args, "--reason", "why not", "--as", actor)
        assert refused.exit_code == 2 and "actor" in refused.output, (args, refused.output)
    task = store.get(task_id)
    assert task.Version == version and [d.Actor for d in task.Steps[0].Decisions] == ["ann"]
