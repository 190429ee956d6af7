"""`baton schedules ...` on a temporary SQLite store and the shipped flows.yaml, through click's runner."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from oss.cli.schedules import schedules
from tests.support.cluster import REPO


def run(tmp_path: Any, *args: str) -> Any:
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_FLOWS_PATH": str(REPO / "flows.yaml")}
    return CliRunner().invoke(schedules, list(args), env=env)


def test_add_list_show_pause_resume_delete(tmp_path: Any) -> None:
    added = run(tmp_path, "add", "nightly-limit", "set_mysql_connection_limit", "name=app_1", "max_connections=50",
                "--cron", "0 3 * * *", "--timezone", "Europe/Paris", "--overlap", "queue", "--label", "team=db", "--json")
    assert added.exit_code == 0, added.output
    shown = json.loads(added.output)
    assert shown["Parameters"] == {"name": "app_1", "max_connections": 50} and shown["Overlap"] == "queue"
    listed = run(tmp_path, "list")
    assert "nightly-limit" in listed.output and "cron '0 3 * * *' Europe/Paris" in listed.output
    assert json.loads(run(tmp_path, "show", shown["ScheduleId"], "--json").output)["Name"] == "nightly-limit"
    assert "paused" in run(tmp_path, "pause", "nightly-limit").output
    assert run(tmp_path, "pause", "nightly-limit").exit_code == 4
    assert "next " in run(tmp_path, "resume", "nightly-limit").output
    assert run(tmp_path, "delete", "nightly-limit").exit_code == 0
    assert run(tmp_path, "show", "nightly-limit").exit_code == 3


def test_refusals_exit_2_and_say_why(tmp_path: Any) -> None:
    bad_cron = run(tmp_path, "add", "x", "demo", "--cron", "61 * * * *")
    assert bad_cron.exit_code == 2 and "cron" in bad_cron.output
    neither = run(tmp_path, "add", "x", "demo")
    assert neither.exit_code == 2 and "exactly one of cron and interval_seconds" in neither.output
    missing = run(tmp_path, "add", "x", "set_mysql_connection_limit", "--every", "60")
    assert missing.exit_code == 2 and "name" in missing.output
    assert run(tmp_path, "add", "x", "demo", "--every", "60").exit_code == 0
    taken = run(tmp_path, "add", "x", "demo", "--every", "60")
    assert taken.exit_code == 2 and "exists already" in taken.output
