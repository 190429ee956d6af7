"""The console's item table (docs/design/item-records.md, "Views and limits"), in a real Chromium: a
for_each step over 260 items kept in records shows its counts by state and its items a page at a
time (Next, First page), a count filters the table by state, the counts follow the items as they
change (the event stream's `progress`), and the task itself never carries the items; an inline
for_each step shows the same table. A screenshot goes to tests/artifacts/."""

from __future__ import annotations

import re
import time

import pytest

from bench.task_view import build_task
from common.engine.kinds.for_each import records as fan_out
from common.engine.document import Run
from common.engine.states import Phase, RunState, StepState
from common.store.sqlite.items import SqliteItemStore
from tests.console.browser import ARTIFACTS, assert_clean, sign_in
from tests.console.live import LiveConsole

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow
SIZE = 260  # the first half succeeded, the rest waiting (bench.task_view)


RUNNING = (130, 131, 132)  # of "records-running": claimed by a worker
ZONES, NODES, FAILING = 4, 30, 5  # "records_fleet": item FAILING of per_node fails, the task rolls back


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    items = SqliteItemStore(live.store.path)
    try:
        build_task(live.store, items, "over-records", SIZE)  # written as a step over records has them
        build_task(live.store, items, "records-running", SIZE)
        for record in items.page_items("records-running", 0, 0, limit=SIZE):
            update: dict = {"Attempts": 1} if record.State is StepState.SUCCEEDED else {}
            if record.Item in RUNNING:  # claimed, as a module's claim leaves them
                run = Run(Cursor=0, Item=record.Item, Phase=Phase.NORMAL, Attempt=1, DispatchId=f"rr-{record.Item}",
                          State=RunState.RUNNING, Owner="worker-7", Deadline=time.time() + 3600)
                update = {"State": StepState.RUNNING, "Attempts": 1, "Run": run, "Outbox": []}
            if update:
                assert items.compare_and_set_item(record.model_copy(update={**update, "Version": record.Version + 1}),
                                                  record.Version)
    finally:
        items.close()
    inline = live.submit("fan_out", nodes=[f"n{i}" for i in range(30)])
    live.wait_final(inline, timeout=120)
    children = live.submit("fleet", nodes=["a", "b"])
    live.wait_final(children, timeout=120)
    # The served OSS opens for_each steps inline (tests/console/conftest.py): over records for this task.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fan_out, "RECORDS_ENABLED", True)
        fleet = live.submit("records_fleet", zones=[f"z{i}" for i in range(ZONES)], nodes=[f"n{i}" for i in range(NODES)],
                            _baton_faults=[{"command": "step_item", "item": FAILING, "action": "fail"}])
        live.wait_final(fleet, timeout=120)
    return {"records": "over-records", "inline": inline, "running": "records-running", "fleet": fleet,
            "children": children}


def test_a_records_step_shows_its_counts_and_pages_its_items(page, live, tasks):
    shown = live.api.get("/api/v1/tasks/over-records").json()["Steps"][0]
    assert shown["Items"] is None and shown["ItemCounts"] == {"succeeded": 130, "waiting": 130}
    sign_in(page, at="/console/#/task/over-records")
    table = page.locator('.items[data-step="0"]')
    expect(table.locator("h3")).to_have_text(f"each: {SIZE} items")
    expect(table.locator("button.item-filter")).to_have_text(["all 260", "succeeded 130", "waiting 130", "failed"])
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


def test_a_records_step_shows_its_count_its_running_items_their_attempts_and_cancel_now(page, live, tasks):
    shown = live.api.get(f"/api/v1/tasks/{tasks['running']}").json()
    assert shown["Steps"][0]["Attempts"] == SIZE // 2 + len(RUNNING)  # summed over its records
    assert sorted(r["Item"] for r in shown["ItemRuns"] if r["State"] == "running") == list(RUNNING)
    sign_in(page, at=f"/console/#/task/{tasks['running']}")
    node = page.locator('.flow-graph .node[data-step="0"]')
    expect(node.locator(".detail")).to_have_text(f"for_each hosts: {SIZE // 2}/{SIZE}")
    expect(node.locator('.count-bar .item-segment[data-state="succeeded"]')).to_have_attribute("data-count", "130")
    expect(node.locator(".state")).to_contain_text(f"{len(RUNNING)} running")
    step = page.locator('.timeline li.step[data-step="0"]')
    expect(step.locator(".phase-normal .attempts")).to_have_text(f"attempts {SIZE // 2 + len(RUNNING)} over {SIZE} items")
    expect(step.locator(".phase-normal .active-run")).to_contain_text("running attempt 1 on worker-7")
    expect(page.locator('button[data-action="cancel-now"]')).to_have_text("Cancel and stop the running step")
    assert_clean(page)


def test_a_rolled_back_records_task_reads_as_an_inline_one(page, live, tasks):
    """Attempts summed, a step passed over backward reads skipped, the item that failed is found
    by the failed filter with its rollback's times, items that never ran say so, and an index is
    jumped to."""
    task = live.api.get(f"/api/v1/tasks/{tasks['fleet']}").json()
    zones, nodes = task["Steps"]
    assert task["TaskStatus"] == 4 and zones["ItemStore"] == nodes["ItemStore"] == "records"
    assert zones["State"] == "skipped" and zones["ItemCounts"] == {"skipped": ZONES} and zones["Attempts"] == ZONES
    # The step's attempts are its items' sums. Which items ran before FAILING failed depends on
    # timing (two chains: FAILING's chain ran 1, 3, 5; the other may still have had its next item
    # unclaimed, withdrawn when the task went backward): so they are checked against the items.
    listed = live.api.get(f"/api/v1/tasks/{tasks['fleet']}/steps/1/items", params={"limit": 500}).json()["Items"]
    ran = [item for item in listed if item["Attempts"]]
    assert FAILING in [item["Item"] for item in ran] and len(ran) >= FAILING // 2 + 1
    assert all(item["Attempts"] == 1 for item in ran)  # retry 0: once each
    assert nodes["Attempts"] == len(ran), (nodes["Attempts"], [item["Item"] for item in ran])
    assert nodes["RollbackAttempts"] == sum(item["RollbackAttempts"] for item in listed) > 0
    sign_in(page, at=f"/console/#/task/{tasks['fleet']}")
    phases = page.locator('.timeline li.step[data-step="1"]')
    expect(phases.locator(".phase-normal .attempts")).to_have_text(f"attempts {nodes['Attempts']} over {NODES} items")
    expect(phases.locator(".phase-rollback .attempts")).to_have_text(
        f"attempts {nodes['RollbackAttempts']} over {NODES} items")
    zone_table = page.locator('.items[data-step="0"]')
    expect(zone_table.locator("button.item-filter")).to_have_text([f"all {ZONES}", f"skipped {ZONES}", "failed"])
    expect(zone_table.locator("tbody tr .c-state")).to_have_text(["skipped"] * ZONES)
    table = page.locator('.items[data-step="1"]')
    never = nodes["ItemCounts"]["waiting"]
    expect(table.locator('button.item-filter[data-state="waiting"]')).to_have_text(f"never started {never}")
    table.locator('button.item-filter[data-state="@failed"]').click()
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-item", str(FAILING))
    expect(rows.first.locator(".c-state")).to_have_text("rolled back")
    expect(rows.first.locator(".c-rollback")).to_contain_text("→")
    table.locator('button.item-filter[data-state=""]').click()
    table.locator("input.items-jump").fill("20")
    table.locator("button.items-go-button").click()
    expect(rows.first).to_have_attribute("data-item", "20")
    expect(rows.first.locator(".c-state")).to_have_text("never started")
    assert_clean(page)


def test_a_sub_flow_item_links_to_its_child_task(page, live, tasks):
    child = live.api.get(f"/api/v1/tasks/{tasks['children']}/steps/0/items").json()["Items"][1]["ChildTaskId"]
    sign_in(page, at=f"/console/#/task/{tasks['children']}")
    link = page.locator('.items[data-step="0"] tbody tr[data-item="1"] a.item-child')
    expect(link).to_have_attribute("href", f"#/task/{child}")
    link.click()
    expect(page.locator(".task-head code.id")).to_have_text(child)
    assert_clean(page)
