"""Pause, resume and skip from the console, in a real browser (headless Chromium) on the live
OSS: the buttons that fit the task, the reason dialog, the answer, and the history with who and
why. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.console.browser import assert_clean, give_reason, save_screenshot, sign_in
from tests.console.live import FAIL_CHARGE, LiveConsole
from tests.support.cluster import STATE_DEADLINE, wait_until

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow
ACTIONS = "b => b.map(x => x.dataset.action)"


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    made = {
        "later": live.submit(name="paused_db", start_at=time.time() + 3600),  # waits: pausable
        "failed": live.submit(name="skipped_db", _baton_faults=FAIL_CHARGE),
    }
    live.wait_final(made["failed"])
    return made


def test_pause_then_resume_from_the_console(page, live, tasks):
    task_id = tasks["later"]
    sign_in(page, at=f"/console/#/task/{task_id}")
    expect(page.locator("[data-action=pause]")).to_be_visible()
    # Its first step waits for its start time: nothing runs it, so an operator may skip it too.
    assert page.locator("[data-action]").evaluate_all(ACTIONS) == ["cancel", "pause", "skip"]
    expect(page.locator("[data-action=skip]")).to_have_text("Skip step 0 (announce)")
    page.click("[data-action=pause]")
    give_reason(page, "database host maintenance", "pause-dialog")
    expect(page.locator(".banner.ok")).to_contain_text("Pause done")
    expect(page.locator(".facts .paused")).to_contain_text("by olga: database host maintenance")
    paused = page.locator("table.history tr", has_text="paused")
    expect(paused.first).to_contain_text("olga")
    expect(page.locator("table.history tr", has_text="withdrawn")).to_have_count(1)
    assert page.locator("[data-action]").evaluate_all(ACTIONS) == ["cancel", "resume"]
    assert live.store.get(task_id).Paused.Actor == "olga"
    save_screenshot(page, page.shots, "flow-paused")
    page.click("[data-action=resume]")
    give_reason(page, "maintenance over", "resume-dialog")
    expect(page.locator(".banner.ok")).to_contain_text("Resume done")
    expect(page.locator("table.history tr", has_text="resumed")).to_contain_text("maintenance over")
    # Resumed: the step withdrawn by the pause is dispatched again, at its start time (an hour
    # away), not at once: a pause and resume lift the operator's hold, not the schedule.
    expect(page.locator(".task-head .badge")).to_have_text("Scheduled")
    resumed = live.store.get(task_id)
    assert resumed.Paused is None and resumed.TaskStatus.name == "NOT_STARTED"
    assert resumed.Outbox and all(entry.DueAt == resumed.StartAt for entry in resumed.Outbox)
    assert_clean(page)


def test_skip_the_failed_step_from_the_console(page, live, tasks):
    task_id = tasks["failed"]
    sign_in(page, at=f"/console/#/task/{task_id}")
    expect(page.locator("[data-action=skip]")).to_have_text("Skip step 3 (charge)")
    page.click("[data-action=skip]")
    give_reason(page, "charged by hand in the billing tool", "skip-dialog")
    expect(page.locator(".banner.ok")).to_contain_text("Skip failed step done")
    skipped = page.locator("table.history tr", has_text="operator_skipped")
    expect(skipped).to_contain_text("olga")
    expect(skipped).to_contain_text("charged by hand in the billing tool")
    # It ran again as a new generation, the step that failed passed as done: it succeeds.
    expect(page.locator(".task-head .badge")).to_have_text("Succeeded")
    charge = page.locator(".timeline > li.step").nth(3)
    expect(charge).to_have_attribute("data-state", "operator_skipped")
    expect(charge.locator(".outcome-badges")).to_contain_text("skipped by an operator")
    save_screenshot(page, page.shots, "flow-skipped")
    assert live.wait_final(task_id).Steps[3].State == "operator_skipped"
    assert_clean(page)


def test_bulk_pause_from_the_task_list_dry_run_first(page, live, tasks):
    wave = uuid.uuid4().hex[:8]
    made = []
    for name in ("bulk_a", "bulk_b"):
        body = {"task_type": "provision_db", "parameters": {"name": name}, "start_at": time.time() + 3600,
                "labels": {"wave": wave}}  # fmt: skip
        made.append(live.api.post("/api/v1/tasks", json=body).json()["task_id"])
    sign_in(page, at=f"/console/#/tasks?label=wave={wave}")
    expect(page.locator("tr.task-row")).to_have_count(2)
    page.select_option("#bulk-action", "pause")
    page.click("#bulk-dry-run")
    give_reason(page, "freeze for the audit", "bulk-dialog")
    expect(page.locator("[data-bulk=dry]")).to_have_text("pause: 2 tasks match; would apply to 2.")
    assert all(live.store.get(t).Paused is None for t in made)  # a dry run changes nothing
    page.click("[data-bulk-apply=pause]")
    expect(page.locator("[data-bulk=applied]")).to_have_text("pause: 2 tasks match; applied to 2.")
    for task_id in made:
        paused = live.store.get(task_id).Paused
        assert (paused.Actor, paused.Reason) == ("olga", "freeze for the audit")
    save_screenshot(page, page.shots, "flow-bulk-paused")
    for task_id in made:  # so they do not sit in the lists of other tests
        assert live.act(task_id, "cancel", "only a test").status_code == 200
    assert_clean(page)


def test_bulk_needs_a_filter_the_bulk_api_takes(page, live, tasks):
    sign_in(page, at="/console/#/tasks?q=paused")
    expect(page.locator(".bulk")).to_contain_text("filter by type, status, owner, label or time first")
    expect(page.locator("#bulk-dry-run")).to_have_count(0)
    assert_clean(page)


def test_cancel_and_stop_a_hung_step_from_the_console(page, live):
    """A plain cancel waits for the running step (up to its timeout); the console also offers to
    stop it now (the API's stop_running), shown only while a step runs."""
    task_id = live.submit(name="hung_db", _baton_faults=[{"command": "init_instance", "action": "hang"}])
    wait_until(lambda: any(r.State.value == "running" and r.Cursor == 2 for r in live.store.get(task_id).Runs),
               STATE_DEADLINE, "the create step running")  # fmt: skip
    sign_in(page, at=f"/console/#/task/{task_id}")
    expect(page.locator("[data-action=cancel-now]")).to_have_text("Cancel and stop the running step")
    assert page.locator("[data-action]").evaluate_all(ACTIONS) == ["cancel", "cancel-now", "pause"]
    page.click("[data-action=cancel-now]")
    give_reason(page, "init hangs on a dead host", "cancel-now-dialog")
    expect(page.locator(".banner.ok")).to_contain_text("Cancel and stop the running step done")
    stopped = page.locator("table.history tr", has_text="stopped")
    expect(stopped.first).to_contain_text("olga")
    expect(page.locator(".task-head .badge")).to_have_text("Cancelled · rolled back")
    expect(page.locator(".timeline > li.step").nth(2)).to_contain_text("stopped by an operator")
    task = live.wait_final(task_id)
    create = task.Steps[2]
    # Stopped by the cancel, not by its timeout: one attempt, no retry (the step allows one).
    assert (create.Attempts, create.Message) == (1, "stopped by a cancel")
    assert task.CancelRequested.Actor == "olga"
    save_screenshot(page, page.shots, "flow-cancel-now")
    assert_clean(page)
