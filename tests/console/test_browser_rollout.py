"""A fleet rollout in the console, in a real Chromium (docs/fan-out.md, "A failure budget" and
"Hold and redrive"): a task that ended with an item failed within its budget says so (its
message, its failed items, shown first on its items view) and the list's filter finds it; a held task shows what failed and why, and offers redrive, roll back,
cancel and skip of the failed item; redriving it from the console lets it finish. Screenshots go
to tests/artifacts/."""

from __future__ import annotations

import time

import pytest

from common.engine.kinds.for_each import records as fan_out
from tests.console.browser import assert_clean, give_reason, row, save_screenshot, sign_in
from tests.console.live import LiveConsole
from tests.support.cluster import STATE_DEADLINE

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow
NODES = [f"n{i}" for i in range(6)]


def fail(item: int, **more) -> dict:
    return {"command": "step_item", "action": "fail", "item": item, "retryable": False, **more}


def wait_held(live: LiveConsole, task_id: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + max(timeout, STATE_DEADLINE)  # as tests.support.cluster.wait_until
    while time.monotonic() < deadline:
        if live.store.get(task_id).Held is not None:
            return
        time.sleep(0.1)
    task = live.store.get(task_id)
    raise AssertionError(f"task {task_id} never held: {task.TaskStatus.name} {task.TaskMessage} "
                         f"{[(e.Event, e.Item, e.Message) for e in task.History]}")


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    # A budget and a hold need the step's items in records: these two open theirs so (the
    # session serves its other for_each steps inline, tests/console/conftest.py). The step opens
    # when its module runs it, later than the submission: records stay on until both tasks are
    # where the tests look at them (a step opened over records finishes over records).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fan_out, "RECORDS_ENABLED", True)
        within = live.submit("patch_rollout", nodes=NODES, _baton_faults=[fail(2)])
        held = live.submit("patch_rollout", nodes=NODES, _baton_faults=[fail(1, times=1), fail(3, times=1)])
        live.wait_final(within, timeout=60)
        wait_held(live, held)
    return {"within": within, "held": held}


def test_a_rollout_that_ended_with_a_failed_item_says_so(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['within']}")
    expect(page.locator(".task-message")).to_have_text("succeeded with 1 failed item (patch)")
    expect(page.locator(".failed-items dd")).to_have_text("1, within their steps' budgets (patch: 1)")
    # Its items: the failed ones first (the filter pressed, first in the row), all one click away.
    items = page.locator('.items[data-step="0"]')
    expect(items.locator(".item-filter").first).to_have_text("failed 1")
    expect(items.locator(".item-filter").first).to_have_attribute("aria-pressed", "true")
    expect(items.locator(".items-table tbody tr")).to_have_count(1)
    expect(items.locator(".items-table tbody tr").first).to_have_attribute("data-item", "2")
    items.locator('.item-filter[data-state=""]').click()
    expect(items.locator(".items-table tbody tr")).to_have_count(len(NODES))
    save_screenshot(page, page.shots, "rollout-failed-items")
    # The list's filter: only the tasks that ended with failed items.
    page.goto("/console/#/tasks")  # signed in: the token is kept for the session
    page.check("#f-failed-items")
    page.click(".filters button[type=submit]")
    expect(row(page, tasks["within"])).to_have_count(1)
    expect(row(page, tasks["held"])).to_have_count(0)
    expect(page.locator("#f-failed-items")).to_be_checked()
    expect(row(page, tasks["within"]).locator(".c-message")).to_have_text("succeeded with 1 failed item (patch)")
    assert_clean(page)


def test_a_held_rollout_shows_why_and_is_redriven_from_the_console(page, live, tasks):
    task_id = tasks["held"]
    sign_in(page, at=f"/console/#/task/{task_id}")
    expect(page.locator(".held dd")).to_contain_text("step 0 (patch) item 3 failed")
    held_items = page.locator('.items[data-step="0"]')  # what holds it, first: the failed items
    expect(held_items.locator(".item-filter").first).to_have_attribute("aria-pressed", "true")
    expect(held_items.locator('.items-table tbody tr[data-item="3"]')).to_have_count(1)
    bar = page.locator(".action-bar")
    expect(bar.locator("button")).to_have_text(["Redrive", "Roll back", "Cancel", "Skip step 0 (patch) item 3"])
    save_screenshot(page, page.shots, "rollout-held")
    bar.locator('button[data-action="redrive"]').click()
    give_reason(page, "the mirror is back", "rollout-redrive-reason")
    task = live.wait_final(task_id, timeout=60)
    assert task.TaskStatus.name == "SUCCESS" and task.FailedItems == 1, task.TaskMessage
    assert [e.Actor for e in task.History if e.Event == "redriven"] != []
    expect(page.locator(".task-message")).to_have_text("succeeded with 1 failed item (patch)")
    assert_clean(page)
