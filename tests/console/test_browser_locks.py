"""Locks in the web console: a task waiting for its lock says so (status label and facts), and
a holder whose rollback failed says it keeps the lock until an operator ends it; a lock taken in
a mode names it, and a task in a mode that shares the key runs beside the holder."""

from __future__ import annotations

import json

import pytest

from tests.console.browser import assert_clean, sign_in
from tests.console.live import FAIL_CHARGE, FAIL_CLEAN, LiveConsole
from tests.support.cluster import STATE_DEADLINE, wait_until

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


@pytest.fixture(scope="module")
def moded(live: LiveConsole):
    holder = live.submit("resize_db", name="moded_one", _baton_faults=FAIL_CHARGE + FAIL_CLEAN)
    live.wait_final(holder)  # rollback failed: it keeps the key in mode resize
    backup = live.submit("backup_db", name="moded_one")
    waiter = live.submit("resize_db", name="moded_one")
    alone = live.submit("resize_db", name="moded_two", _baton_faults=FAIL_CHARGE + FAIL_CLEAN)
    live.wait_final(alone)  # keeps its key, nobody in line
    yield {"holder": holder, "backup": live.wait_final(backup).TaskId, "waiter": waiter, "alone": alone}
    assert live.act(waiter, "cancel", "test over").status_code == 200
    for kept in (holder, alone):
        assert live.act(kept, "compensate", "test over").status_code == 200
    for task_id in (waiter, holder, alone):
        live.wait_final(task_id)


def test_each_task_shows_the_mode_of_its_lock_and_a_shared_mode_runs_beside_the_holder(page, live, moded):
    sign_in(page, at=f"/console/#/task/{moded['holder']}")
    expect(page.locator(".task-head dl.facts")).to_contain_text(
        "inst:moded_one (mode resize, limit 5): kept, held until an operator ends the task")
    page.goto(f"/console/#/task/{moded['backup']}")  # it ran and ended while the resize kept the key
    expect(page.locator(".task-head")).to_contain_text("Succeeded")
    expect(page.locator(".task-head dl.facts")).to_contain_text("inst:moded_one (mode backup, limit 5): released")
    page.goto(f"/console/#/task/{moded['waiter']}")
    expect(page.locator(".task-head")).to_contain_text("Waiting for lock")
    expect(page.locator(".task-head dl.facts")).to_contain_text("lock inst:moded_one (mode resize) since")
    assert_clean(page)


def test_the_plan_names_the_mode_it_would_ask_in(page, live, moded):
    sign_in(page, at="/console/#/plan")
    page.select_option("#plan-type", "backup_db")
    page.fill("#plan-parameters", json.dumps({"name": "moded_one"}))
    page.click("#plan-go")
    # A backup shares the key with the resize that keeps it, but the resize in line goes first.
    expect(page.locator("#plan-locks tbody tr")).to_contain_text("backup")
    expect(page.locator("#plan-locks tbody tr")).to_contain_text(f"held by {moded['holder']}; 1 waiting")
    page.fill("#plan-parameters", json.dumps({"name": "moded_two"}))
    page.click("#plan-go")
    expect(page.locator("#plan-locks tbody tr")).to_contain_text(f"free to share with {moded['alone']}")
    expect(page.locator("#plan-start h2")).not_to_have_text("Starts: Once its lock is free")
    assert_clean(page)


def test_a_step_waiting_for_its_lock_names_the_mode(page, live):
    holder = live.submit("watch_db", name="watched")  # checks again until cancelled: keeps the step's key
    wait_until(lambda: any(e.Event == "check_again" for e in live.store.get(holder).History), STATE_DEADLINE,
               "the holder checking again")  # fmt: skip
    waiter = live.submit("watch_db", name="watched")  # two resizes may not share it
    try:
        assert [u.Mode for u in live.store.get(waiter).UnitLocks] == ["resize"]
        sign_in(page, at=f"/console/#/task/{waiter}")
        expect(page.locator(".active-run")).to_contain_text("waiting for the step's lock (mode resize)")
        assert_clean(page)
    finally:
        for task_id in (waiter, holder):
            assert live.act(task_id, "cancel", "test over").status_code == 200
        for task_id in (waiter, holder):
            live.wait_final(task_id)
