"""`baton modules`: the announced modules, live first; stale ones with --stale."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner

from common.store.modules_port import ModuleRegistration
from common.store.modules_sqlite import SqliteModuleRegistry
from oss.cli import main


def test_baton_modules_lists_live_ones_and_stale_ones_on_request(tmp_path):
    registry = SqliteModuleRegistry(tmp_path / "baton.db")
    for worker, module, age in (("mysql@h:1", "mysql", 1.0), ("resource@h:2", "resource", 3600.0)):
        registry.announce(ModuleRegistration(WorkerId=worker, Module=module, Commands=["a", "b"], Version="0.1.0",
                                             Kinds={"a": "async", "b": "process"},
                                             Host="h", Pid=1, StartedAt=time.time() - 7200, HeartbeatAt=time.time() - age))  # fmt: skip
    registry.close()
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}"}
    shown = CliRunner().invoke(main, ["modules"], env=env)
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.startswith("mysql        live   mysql@h:1") and "resource" not in shown.stdout
    assert "commands: a (async), b (process)" in shown.stdout  # each command's kind
    everything = json.loads(CliRunner().invoke(main, ["modules", "--stale", "--json"], env=env).stdout)
    assert [(w["Module"], w["Live"]) for w in everything] == [("mysql", True), ("resource", False)]
