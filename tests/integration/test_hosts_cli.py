"""`baton hosts ...` on a temporary SQLite store, through click's runner."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from oss.cli.hosts import hosts


def run(tmp_path: Any, *args: str) -> Any:
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}"}
    return CliRunner().invoke(hosts, list(args), env=env)


def test_add_list_drain_activate_and_sweep(tmp_path: Any) -> None:
    added = run(tmp_path, "add", "db-1", "--cpu", "8", "--memory-mb", "16384", "--storage-gb", "500")
    assert added.exit_code == 0 and "db-1" in added.output and "cpu 0/8" in added.output
    assert run(tmp_path, "add", "db-1", "--cpu", "8", "--memory-mb", "16384", "--storage-gb", "500").exit_code == 0
    listed = json.loads(run(tmp_path, "list", "--json").output)
    assert [(h["name"], h["state"], h["free"]["cpu"]) for h in listed] == [("db-1", "active", 8)]
    assert json.loads(run(tmp_path, "drain", "db-1", "--json").output)["state"] == "draining"
    assert "active" in run(tmp_path, "activate", "db-1").output
    assert json.loads(run(tmp_path, "sweep", "--prune-days", "7").output) == {"expired": 0, "pruned": 0}


def test_refusals_exit_with_their_codes_and_say_why(tmp_path: Any) -> None:
    run(tmp_path, "add", "db-1", "--cpu", "1", "--memory-mb", "1", "--storage-gb", "1")
    conflict = run(tmp_path, "add", "db-1", "--cpu", "2", "--memory-mb", "1", "--storage-gb", "1")
    assert conflict.exit_code == 2 and "exists with capacity" in conflict.output
    bad = run(tmp_path, "add", "DB'1", "--cpu", "1", "--memory-mb", "1", "--storage-gb", "1")
    assert bad.exit_code == 2 and "not allowed" in bad.output
    missing = run(tmp_path, "drain", "nope")
    assert missing.exit_code == 3 and "no such host" in missing.output and "nope" not in missing.output
    assert run(tmp_path, "add", "db-2", "--cpu", "-1", "--memory-mb", "1", "--storage-gb", "1").exit_code == 2


def test_hosts_use_the_inventory_the_resource_module_uses(tmp_path: Any, monkeypatch: Any) -> None:
    """BATON_RESOURCE_INVENTORY_URL names the inventory of every surface, not only the module's."""
    from common.settings import load_settings
    from modules.resource.inventory.factory import open_configured_inventory, open_inventory

    elsewhere = f"sqlite:///{tmp_path / 'inventory.db'}"
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_RESOURCE_INVENTORY_URL": elsewhere}
    added = CliRunner().invoke(hosts, ["add", "db-9", "--cpu", "2", "--memory-mb", "1", "--storage-gb", "1"], env=env)
    assert added.exit_code == 0, added.output
    assert [h.name for h in open_inventory(elsewhere).list_hosts(0.0)] == ["db-9"]
    assert open_inventory(env["BATON_STORE_URL"]).list_hosts(0.0) == []
    for key, value in env.items():  # what the module's commands and the reconciler open: the same
        monkeypatch.setenv(key, value)
    assert [h.name for h in open_configured_inventory(load_settings()).list_hosts(0.0)] == ["db-9"]
