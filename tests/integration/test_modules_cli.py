"""`baton modules`: the announced modules, live first; stale ones with --stale."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner

from common.store.side.modules import ModuleRegistration
from common.store.sqlite.modules import SqliteModuleRegistry
from oss.cli import main


def test_baton_modules_lists_live_ones_and_stale_ones_on_request(tmp_path):
    registry = SqliteModuleRegistry(tmp_path / "baton.db")
    for worker, module, age in (("mysql@h:1", "mysql", 1.0), ("resource@h:2", "resource", 3600.0)):
        registry.announce(ModuleRegistration(WorkerId=worker, Module=module, Commands=["a", "b"], Version="0.1.0",
                                             Kinds={"a": "async", "b": "process"},
                                             Host="h", Pid=1, StartedAt=time.time() - 7200, HeartbeatAt=time.time() - age))  # fmt: skip
    registry.close()
    # Live while the last heartbeat is at most 3 x 600 s old: however long a loaded machine takes
    # from the announcement to the command's look, the one 1 s old is live, the hour-old one not.
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_MODULE_HEARTBEAT_SECONDS": "600"}
    shown = CliRunner().invoke(main, ["modules"], env=env)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("mysql        live   mysql@h:1") and "resource" not in shown.stdout
    assert "commands: a (async), b (process)" in shown.stdout  # each command's kind
    everything = json.loads(CliRunner().invoke(main, ["modules", "--stale", "--json"], env=env).stdout)
    assert [(w["Module"], w["Live"]) for w in everything] == [("mysql", True), ("resource", False)]


def test_baton_modules_stale_shows_who_undrained_a_module_last_and_why(tmp_path):
    flows = tmp_path / "flows.yaml"
    flows.write_text("version: 1\ntask_types:\n  t:\n    steps:\n      - name: s\n        normal: {module: mysql, command: c}\n")
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_FLOWS_PATH": str(flows)}
    runner = CliRunner()
    assert runner.invoke(main, ["modules", "drain", "mysql", "--reason", "deploy 1.4", "--as", "ops:ann"], env=env).exit_code == 0
    again = runner.invoke(main, ["modules", "drain", "mysql", "--reason", "deploy 1.5", "--as", "ops:bob"], env=env)
    assert again.exit_code == 4 and "drained already (by ops:ann at " in again.output, again.output
    undrained = runner.invoke(main, ["modules", "undrain", "mysql", "--reason", "1.4 is out, password=hunter2",
                                     "--as", "ops:ann"], env=env)  # fmt: skip
    assert undrained.exit_code == 0, undrained.output
    assert "undrained" not in runner.invoke(main, ["modules"], env=env).stdout
    stale = runner.invoke(main, ["modules", "--stale"], env=env).stdout
    first = stale.splitlines()[0]
    assert first.startswith("mysql        undrained by ops:ann at ") and first.endswith(": 1.4 is out, password=***"), stale
    as_json = json.loads(runner.invoke(main, ["modules", "--stale", "--json"], env=env).stdout or "[]")
    assert as_json == []  # no worker announced itself: the JSON lists workers
