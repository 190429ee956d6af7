"""The console's item table (DESIGN.md 12.5), in a real Chromium: a for_each step over 260 items
kept in records shows its counts by state and its items a page at a time (Next, First page), a
count filters the table by state, the counts follow the items as they change (the event stream's
`progress`), and the task itself never carries the items; an inline
for_each step shows the same table. A screenshot goes to tests/artifacts/."""

from __future__ import annotations

import re

import pytest

from bench.task_view import build_task
from common.engine.states import StepState
from common.store.items_sqlite import SqliteItemStore
from tests.console.browser import ARTIFACTS, assert_clean, sign_in
from tests.console.live import LiveConsole

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow
SIZE = 260  # the first half succeeded, the rest waiting (bench.task_view)


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    items = SqliteItemStore(live.store.path)
    try:
        build_task(live.store, items, "over-records", SIZE)  # written as a step over records has them
    finally:
        items.close()
    inline = live.submit("fan_out", nodes=[f"n{i}" for i in range(30)])
    live.wait_final(inline, timeout=120)
    return {"records": "over-records", "inline": inline}


def test_a_records_step_shows_its_counts_and_pages_its_items(page, live, tasks):
    shown = live.api.get("/api/v1/tasks/over-records").json()["Steps"][0]
    assert shown["Items"] is None and shown["ItemCounts"] == {"succeeded": 130, "waiting": 130}
    sign_in(page, at="/console/#/task/over-records")
    table = page.locator('.items[data-step="0"]')
    expect(table.locator("h3")).to_have_text(f"each: {SIZE} items")
    expect(table.locator("button.item-filter")).to_have_text(["all 260", "succeeded 130", "waiting 130"])
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(25)
    expect(rows.first).to_have_attribute("data-item", "0")
    expect(table.locator("button.items-first")).to_be_disabled()
    table.locator("button.items-next").click()
    expect(rows.first).to_have_attribute("data-item", "25")
    expect(table.locator(".items-nav .muted")).to_have_text("items 25–49")
    table.locator("button.items-first").click()
    expect(rows.first).to_have_attribute("data-item", "0")
    ARTIFACTS.mkdir(exist_ok=True)
    table.screenshot(path=str(ARTIFACTS / "console-items.png"))
    table.locator('button.item-filter[data-state="waiting"]').click()
    expect(table.locator('button.item-filter[data-state="waiting"]')).to_have_attribute("aria-pressed", "true")
    expect(rows.first).to_have_attribute("data-item", "130")  # the first item still waiting
    assert set(rows.evaluate_all("rows => rows.map(r => r.dataset.state)")) == {"waiting"}
    for page_no in range(1, 6):  # 130 waiting: 25 a page, the last page has 5
        table.locator("button.items-next").click()
        expect(rows.first).to_have_attribute("data-item", str(130 + 25 * page_no))
    expect(rows).to_have_count(5)
    expect(rows.last).to_have_attribute("data-item", str(SIZE - 1))
    expect(table.locator("button.items-next")).to_be_disabled()
    assert_clean(page)


def test_the_counts_follow_the_items_as_they_change(page, live, tasks):
    sign_in(page, at="/console/#/task/over-records")
    table = page.locator('.items[data-step="0"]')
    expect(table.locator('button.item-filter[data-state="waiting"]')).to_have_text(re.compile(r"waiting \d+"))
    waiting = int(table.locator('button.item-filter[data-state="waiting"]').inner_text().split()[-1])
    items = SqliteItemStore(live.store.path)
    try:  # five waiting items succeed, as their module would make them: the task does not change
        for record in items.page_items("over-records", 0, 0, limit=5, states=[StepState.WAITING]):
            done = record.model_copy(update={"State": StepState.SUCCEEDED, "Open": False, "Version": record.Version + 1})
            assert items.compare_and_set_item(done, record.Version)
    finally:
        items.close()
    expect(table.locator('button.item-filter[data-state="waiting"]')).to_have_text(f"waiting {waiting - 5}")
    assert_clean(page)


def test_an_inline_step_shows_the_same_table(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['inline']}")
    table = page.locator('.items[data-step="1"]')
    expect(table.locator("h3")).to_have_text("per_node: 30 items")
    expect(table.locator("button.item-filter").first).to_have_text("all 30")
    expect(table.locator("tbody tr")).to_have_count(25)
    table.locator("button.items-next").click()
    expect(table.locator("tbody tr")).to_have_count(5)
    expect(table.locator("tbody tr").last.locator(".c-value")).to_have_text('n29')
    assert_clean(page)
