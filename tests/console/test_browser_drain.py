"""A module drain in the web console: a task whose step a drained module holds says so (status
label, and the module among the facts), and its history shows who drained it and why."""

from __future__ import annotations

import time

import pytest

from tests.console.browser import assert_clean, sign_in
from tests.console.live import LiveConsole
from tests.support.cluster import STATE_DEADLINE, wait_until

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(live: LiveConsole):
    assert live.api.post("/api/v1/modules/mysql/drain", json={"reason": "deploy mysql 1.4"}).status_code == 200
    time.sleep(1.2)  # a module reads its drain record at most once a second
    waiter = live.submit(name="drained_db")
    wait_until(lambda: live.held(waiter), STATE_DEADLINE, "the waiter held by the drain")
    yield {"waiter": waiter}
    # Leave nothing held for the other console tests: undrained, the task runs to its end.
    assert live.api.post("/api/v1/modules/mysql/undrain", json={"reason": "test over"}).status_code == 200
    live.wait_final(waiter, timeout=30)


def test_a_task_held_by_a_drained_module_names_the_module(page, live, tasks):
    assert live.held(tasks["waiter"])
    sign_in(page, at=f"/console/#/task/{tasks['waiter']}")
    expect(page.locator(".task-head")).to_contain_text("Running · waiting for drain")
    facts = page.locator(".task-head dl.facts")
    expect(facts).to_contain_text("module mysql to be undrained (drained since")
    expect(facts.locator(".drained strong")).to_have_text("mysql")
    expect(page.locator("body")).to_contain_text("waiting_for_drain")
    expect(page.locator("body")).to_contain_text("module mysql drained by olga: deploy mysql 1.4")
    assert_clean(page)


def test_the_held_step_reads_waiting_says_why_and_may_be_skipped(page, live, tasks):
    assert live.held(tasks["waiter"])
    sign_in(page, at=f"/console/#/task/{tasks['waiter']}")
    step = page.locator('.timeline li.step[data-step="2"]')
    expect(step).to_have_attribute("data-state", "waiting")  # held, not running: nothing runs it
    expect(step.locator(".phase-normal .active-run")).to_have_text(
        "held: module mysql is drained; it runs once the module is undrained")
    expect(page.locator('.flow-graph .node[data-step="2"]')).to_have_attribute("data-state", "waiting")
    expect(page.locator("[data-action=skip]")).to_have_text("Skip step 2 (create)")
    assert_clean(page)
