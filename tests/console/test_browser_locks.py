"""Locks in the web console: a task waiting for its lock says so (status label and facts), and
a holder whose rollback failed says it keeps the lock until an operator ends it."""

from __future__ import annotations

import pytest

from tests.console.browser import assert_clean, sign_in
from tests.console.live import FAIL_CHARGE, FAIL_CLEAN, LiveConsole

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(live: LiveConsole):
    holder = live.submit("locked_db", name="locked_one", _baton_faults=FAIL_CHARGE + FAIL_CLEAN)
    live.wait_final(holder)  # rollback failed: it keeps the lock
    waiter = live.submit("locked_db", name="locked_one")
    yield {"holder": holder, "waiter": waiter}
    # Leave nothing unfinished for the other console tests: the operator ends both.
    assert live.act(waiter, "cancel", "test over").status_code == 200
    assert live.act(holder, "compensate", "test over").status_code == 200
    live.wait_final(waiter)
    live.wait_final(holder)


def test_a_waiting_task_says_what_it_waits_for_and_the_holder_that_keeps_it(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['waiter']}")
    expect(page.locator(".task-head")).to_contain_text("Waiting for lock")
    expect(page.locator(".task-head dl.facts")).to_contain_text("lock db:locked_one since")
    page.goto(f"/console/#/task/{tasks['holder']}")
    expect(page.locator(".task-head dl.facts")).to_contain_text(
        "db:locked_one (limit 1): kept, held until an operator ends the task")
    assert_clean(page)
