"""Rate limits in the web console (docs/guide/rate-limits.md): a task past its key's limit says it
waits for a start slot and when the next one frees; the task that took the slot says when."""

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
    started = live.submit("rated_db", name="rated_one")
    live.wait_final(started)
    waiter = live.submit("rated_db", name="rated_one")
    yield {"started": started, "waiter": waiter}
    assert live.act(waiter, "cancel", "test over").status_code == 200
    live.wait_final(waiter)


def test_a_waiting_task_names_its_rate_and_the_next_slot(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['waiter']}")
    expect(page.locator(".task-head")).to_contain_text("Waiting for rate")
    expect(page.locator(".task-head dl.facts")).to_contain_text("rate db:rated_one: 1 per 3600s")
    expect(page.locator(".task-head dl.facts")).to_contain_text("next slot at")
    page.goto(f"/console/#/task/{tasks['started']}")
    expect(page.locator(".task-head dl.facts")).to_contain_text("db:rated_one: 1 per 3600s: slot taken at")
    assert_clean(page)
