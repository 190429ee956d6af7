"""`baton bulk ...` on a temporary SQLite store and the shipped flows.yaml, through click's runner."""

from __future__ import annotations

import json
from typing import Any

from click.testing import CliRunner

from common.broker.inprocess import InProcessBroker
from common.flows import load_flows
from common.settings import load_settings
from common.store.sqlite.tasks import SqliteStore
from oss.cli.bulk import bulk
from oss.services.tasks import TaskService
from tests.support.cluster import REPO


def run(tmp_path: Any, *args: str) -> Any:
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_FLOWS_PATH": str(REPO / "flows.yaml"),
           "BATON_LOG_LEVEL": "warning"}  # fmt: skip
    return CliRunner().invoke(bulk, list(args), env=env)


def submit(tmp_path: Any, count: int, **labels: str) -> list[str]:
    store, broker = SqliteStore(tmp_path / "baton.db"), InProcessBroker()
    service = TaskService(store, broker, load_flows(REPO / "flows.yaml"), load_settings())
    try:
        return [service.submit("demo", {}, labels=labels).task.TaskId for _ in range(count)]
    finally:
        service.close()
        store.close()


def test_dry_run_then_apply(tmp_path: Any) -> None:
    ids = submit(tmp_path, 3, wave="7")
    submit(tmp_path, 2, wave="8")
    dry = run(tmp_path, "cancel", "--label", "wave=7", "--reason", "bad wave")
    assert dry.exit_code == 0, dry.output
    assert "3 tasks match; would apply to 3, 0 refused" in dry.output and "--apply" in dry.output
    done = run(tmp_path, "cancel", "--label", "wave=7", "--reason", "bad wave", "--apply", "--json")
    assert done.exit_code == 0, done.output
    assert sorted(json.loads(done.output)["applied"]) == sorted(ids)
    again = run(tmp_path, "cancel", "--label", "wave=7", "--reason", "bad wave", "--apply")
    assert again.exit_code == 4 and "3 refused: task is ROLLED_BACK" in again.output


def test_usage_errors(tmp_path: Any) -> None:
    nothing = run(tmp_path, "cancel", "--reason", "all of it")
    assert nothing.exit_code == 2 and "at least one filter" in nothing.output
    assert run(tmp_path, "retry", "--status", "NOPE", "--reason", "x").exit_code == 2
    assert run(tmp_path, "retry", "--status", "4").exit_code == 2  # no reason


def test_a_partly_applied_bulk_exits_4_and_a_dry_run_0_whatever_it_would_refuse(tmp_path: Any) -> None:
    first = submit(tmp_path, 2, wave="5")
    assert run(tmp_path, "cancel", "--label", "wave=5", "--reason", "r", "--apply").exit_code == 0
    submit(tmp_path, 1, wave="5")  # two rolled back now, one still cancellable
    dry = run(tmp_path, "cancel", "--label", "wave=5", "--reason", "r")
    assert dry.exit_code == 0 and "would apply to 1, 2 refused" in dry.output
    partly = run(tmp_path, "cancel", "--label", "wave=5", "--reason", "r", "--apply", "--json")
    assert partly.exit_code == 4
    answer = json.loads(partly.output)
    assert len(answer["applied"]) == 1 and sorted(r["task_id"] for r in answer["refused"]) == sorted(first)
