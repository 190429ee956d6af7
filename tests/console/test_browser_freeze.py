"""A freeze window in the web console: a task created while one is open says it waits for it
(status label, and the window's name and end among the facts), and its history shows the wait."""

from __future__ import annotations

import pytest

from tests.console.browser import assert_clean, sign_in
from tests.console.live import LiveConsole

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(live: LiveConsole):
    waiter = live.submit("frozen_db")
    yield {"waiter": waiter}
    # Leave nothing unfinished for the other console tests.
    assert live.act(waiter, "cancel", "test over").status_code == 200
    live.wait_final(waiter)


def test_a_task_held_by_a_freeze_window_names_the_window_and_its_end(page, live, tasks):
    task = live.store.get(tasks["waiter"])
    assert task is not None and task.WaitingFor is not None and task.WaitingFor.Kind == "freeze"
    sign_in(page, at=f"/console/#/task/{tasks['waiter']}")
    expect(page.locator(".task-head")).to_contain_text("Waiting for freeze")
    facts = page.locator(".task-head dl.facts")
    expect(facts).to_contain_text("freeze window maintenance to end at")
    expect(facts.locator(".frozen strong")).to_have_text("maintenance")
    expect(page.locator("body")).to_contain_text("waiting_for_freeze")
    assert_clean(page)


def test_a_frozen_task_reached_no_step_and_the_plan_says_it_starts_once_the_window_ends(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['waiter']}")
    expect(page.locator(".task-head dl.facts")).to_contain_text("none of 1 started yet")
    expect(page.locator(".task-head dl.facts")).not_to_contain_text("reached")
    page.goto("/console/#/plan")
    page.select_option("#plan-type", "frozen_db")
    page.click("#plan-go")
    expect(page.locator("#plan-start h2")).to_have_text("Starts: Once its freeze window ends")
    expect(page.locator("#plan-start")).to_contain_text("once freeze window maintenance ends at")
    assert_clean(page)
