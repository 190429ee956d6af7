"""`baton pause | resume | skip`, `baton submit --after` and `baton bulk pause|resume` through
click's runner on a temporary SQLite store: who and why in the history, exit codes of refusals."""

from __future__ import annotations

import json
from typing import Any

from tests.api.support import FAIL
from tests.integration.test_bulk_cli import run as run_bulk
from tests.integration.test_bulk_cli import submit as submit_demo
from tests.integration.test_cli import cli, submitted  # noqa: F401  (the fixture)


def history(driver: Any, task_id: str) -> list[tuple[str, str | None, str]]:
    return [(e.Event, e.Actor, e.Message) for e in driver.store.get(task_id).History]


def test_pause_and_resume_record_who_and_why(cli) -> None:  # noqa: F811
    run, driver = cli
    task_id = submitted(run)
    paused = run("pause", task_id, "--reason", "db host patching", "--as", "ann", "--json")
    assert paused.exit_code == 0, paused.output
    assert json.loads(paused.stdout)["Paused"]["Actor"] == "ann"
    again = run("pause", task_id, "--reason", "twice")
    assert again.exit_code == 4 and "paused already by ann" in again.output
    resumed = run("resume", task_id, "--reason", "patched", "--as", "ann")
    assert resumed.exit_code == 0, resumed.output
    assert [h for h in history(driver, task_id) if h[0] in ("paused", "resumed")] == [
        ("paused", "ann", "db host patching"), ("resumed", "ann", "patched")]
    assert driver.store.get(task_id).Steps[0].State == "running"
    assert run("resume", task_id, "--reason", "x").exit_code == 4  # not paused any more
    assert run("pause", "no-such-task", "--reason", "x").exit_code == 3


def test_skip_a_failed_step_needs_the_step_and_records_it(cli) -> None:  # noqa: F811
    run, driver = cli
    task_id = submitted(run)
    driver.step(task_id)
    driver.step(task_id, FAIL)  # step 1 failed: both steps are rolled back
    driver.step(task_id)
    driver.step(task_id)
    assert driver.store.get(task_id).TaskStatus == 4
    assert run("skip", task_id, "--reason", "x").exit_code == 2  # --step is required
    assert run("skip", task_id, "--step", "9", "--reason", "x").exit_code == 2
    assert run("cancel", task_id, "--step", "1", "--reason", "x").exit_code == 2  # skip only
    refused = run("skip", task_id, "--step", "0", "--reason", "x")
    assert refused.exit_code == 4 and "did not fail" in refused.output
    skipped = run("skip", task_id, "--step", "1", "--reason", "created by hand", "--as", "ann")
    assert skipped.exit_code == 0, skipped.output
    assert ("operator_skipped", "ann", "created by hand") in history(driver, task_id)
    driver.step(task_id)
    assert driver.store.get(task_id).TaskStatus == 0


def test_submit_after_another_task(cli) -> None:  # noqa: F811
    run, driver = cli
    first = submitted(run, "--key", "first-wave")
    second = submitted(run, "--after", "first-wave")
    assert driver.store.get(second).WaitingFor.TaskId == first
    unknown = run("submit", "create_db", "name=db1", "--after", "nope")
    assert unknown.exit_code == 2 and "after_task: no task has this id or idempotency key" in unknown.output and "nope" not in unknown.output


def test_bulk_pause_and_resume(tmp_path: Any) -> None:
    ids = submit_demo(tmp_path, 2, wave="9")
    dry = run_bulk(tmp_path, "pause", "--label", "wave=9", "--reason", "freeze")
    assert dry.exit_code == 0 and "2 tasks match; would apply to 2, 0 refused" in dry.output
    applied = run_bulk(tmp_path, "pause", "--label", "wave=9", "--reason", "freeze", "--apply", "--json")
    assert applied.exit_code == 0, applied.output
    assert sorted(json.loads(applied.stdout)["applied"]) == sorted(ids)
    resumed = run_bulk(tmp_path, "resume", "--label", "wave=9", "--reason", "thaw", "--apply")
    assert resumed.exit_code == 0 and "applied to 2" in resumed.output


def test_skip_of_an_item_in_a_rolled_back_task_exits_2(cli, inline_items) -> None:  # noqa: F811  (an inline step: the simulator keeps no records here)
    from common.engine.states import Phase
    from tests.support.dag_sim import Simulator
    from tests.unit.test_graph_transitions import fan_out, new

    run, driver = cli
    simulator = Simulator(driver.store, lambda t, cursor, item, phase: cursor == 1 and item == 0 and phase is Phase.NORMAL)
    simulator.submit(new(fan_out(), {"hosts": ["h0", "h1"]}, task_id="fe-cli"))
    simulator.run(lambda n: 0)
    refused = run("skip", "fe-cli", "--step", "1", "--item", "0", "--reason", "x")
    assert refused.exit_code == 2 and "fixes its items anew" in refused.output
