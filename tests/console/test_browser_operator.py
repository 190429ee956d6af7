"""The console as an operator reads it, in a real browser (headless Chromium): which step
failed and how each phase ended, every attempt with its error and duration, times in one
24-hour format with their zone, a delayed task shown as scheduled, tables that fit their card
at any width, a legend for the step colours, alarms with their task's state now and links,
acknowledging many alarms with a reason, search by id or text, and counts per status.

Screenshots go to tests/artifacts/ (gitignored) to be looked at.
"""

from __future__ import annotations

import re
import time
import uuid
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from common.engine.document import Alarm
from tests.console.browser import (
    SECRET,
    TIME_ZONE,
    TIME_ZONE_OFFSET,
    assert_clean,
    give_reason,
    row,
    save_screenshot,
    sign_in,
)
from tests.console.live import FAIL_CHARGE, FAIL_CLEAN, FLAKY_CREATE, LiveConsole
from tests.support.cluster import STATE_DEADLINE

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow
# Every time shown: "2026-11-23 16:55:07 +05:30" (a history row adds milliseconds).
TIME_SHOWN = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{3})? " + re.escape(TIME_ZONE_OFFSET) + "$")
WIDTHS = (1360, 1024, 800, 390)


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    made = {
        "rolled_back": live.submit(name="failing_db", _baton_faults=FAIL_CHARGE),
        "flaky": live.submit(name="flaky_db", _baton_faults=FLAKY_CREATE + FAIL_CHARGE),
        "stuck": live.submit(name="stuck_db", _baton_faults=FAIL_CHARGE + FAIL_CLEAN),
        "ok": live.submit(name="fine_db", admin_password=SECRET),
    }
    for task_id in made.values():
        live.wait_final(task_id)
    return made


def test_the_step_that_failed_is_marked_and_each_phase_says_how_it_ended(page, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['rolled_back']}")
    steps = page.locator(".timeline > li.step")
    expect(steps).to_have_count(4)
    charge = steps.nth(3)
    expect(charge).to_have_attribute("data-failed", "true")
    expect(charge.locator(".failed-flag")).to_have_text("✖ the step that failed")
    expect(charge.locator(".normal-outcome")).to_have_text("failed")
    expect(charge.locator(".rollback-outcome")).to_have_text("rolled back")
    for index in (1, 2):  # undone because step 3 failed: they had succeeded
        expect(steps.nth(index).locator(".normal-outcome")).to_have_text("succeeded")
        expect(steps.nth(index).locator(".rollback-outcome")).to_have_text("rolled back")
        expect(steps.nth(index).locator(".failed-flag")).to_have_count(0)
        assert steps.nth(index).get_attribute("data-failed") is None
    # Step 0 has no rollback: it succeeded, and was passed over.
    expect(steps.nth(0).locator(".outcome-badges")).to_have_text("succeeded → skipped")
    assert page.locator(".step[data-failed=true]").count() == 1
    save_screenshot(page, page.shots, "op-failed-step")
    assert_clean(page)


def test_every_attempt_shows_its_error_and_duration(page, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['flaky']}")
    create = page.locator(".timeline > li.step").nth(2)
    attempts = create.locator(".phase-normal .attempt")
    expect(attempts).to_have_count(2)
    first, second = attempts.nth(0), attempts.nth(1)
    expect(first.locator(".attempt-no")).to_have_text("attempt 1")
    expect(first.locator(".attempt-outcome")).to_have_text("failed, retried")
    expect(first.locator(".phase-message")).to_have_text("injected failure in init_instance")
    expect(first.locator(".took")).to_have_text(re.compile(r"^\d+ ms$|^\d+\.\d s$"))
    expect(second.locator(".attempt-outcome")).to_have_text("ok")
    expect(second.locator(".phase-message")).to_have_count(0)
    expect(create.locator(".phase-normal .attempts")).to_have_text("attempts 2/2")
    # The step that failed afterwards (charge) had one attempt: its error is the phase's.
    expect(page.locator(".timeline > li.step").nth(3).locator(".phase-normal .phase-message")).to_have_text(
        "injected failure in deduct_resource"
    )
    create.scroll_into_view_if_needed()
    save_screenshot(page, page.shots, "op-attempts")
    assert_clean(page)


def test_times_have_one_24_hour_format_with_their_zone(page, live, tasks):
    task = live.store.get(tasks["flaky"])
    assert task is not None
    sign_in(page)
    # Each page is told by what only it draws: going from one hash route to the next keeps the
    # previous page on screen until the new one is drawn, so "a time is visible" alone could be
    # the previous page's.
    pages = (
        (f"/console/#/task/{tasks['flaky']}", "table.history"),
        ("/console/#/tasks", "table.tasks"),
        ("/console/#/alarms?all=1", "table.alarms"),
    )
    for at, drawn in pages:
        page.goto(at)
        expect(page.locator(f"{drawn} time").first).to_be_visible()
        # A live update may redraw the table between the wait above and this read: read again.
        shown: list[str] = []
        redrawn_by = time.monotonic() + STATE_DEADLINE
        while not shown and time.monotonic() < redrawn_by:
            shown = page.locator("main time").all_inner_texts()
            if not shown:
                page.wait_for_timeout(100)
        assert shown and all(TIME_SHOWN.match(text) for text in shown), [
            t for t in shown if not TIME_SHOWN.match(t)
        ]
        assert not re.search(r"\d\s?(AM|PM)\b", page.inner_text("body"), re.IGNORECASE)
    page.goto("/console/#/tasks")
    expect(page.locator(".title-row .muted")).to_contain_text(TIME_ZONE_OFFSET)  # "updated ..."
    # The right time, in the browser's zone: the creation time of the task, to the second.
    created = datetime.fromtimestamp(int(task.TimeCreate), ZoneInfo(TIME_ZONE))
    expect(row(page, task.TaskId).locator(".c-created time")).to_have_text(
        created.strftime("%Y-%m-%d %H:%M:%S ") + TIME_ZONE_OFFSET
    )
    # The time filters are typed the same way, in the same zone: from the task's second on.
    expect(page.locator("input[name=created_from]")).to_have_attribute(
        "placeholder", f"YYYY-MM-DD HH:MM ({TIME_ZONE_OFFSET})"
    )
    page.fill("input[name=created_from]", created.strftime("%Y-%m-%d %H:%M:%S"))
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(rf"created_from={int(task.TimeCreate)}$"))
    expect(row(page, task.TaskId)).to_be_visible()
    expect(page.locator("input[name=created_from]")).to_have_value(created.strftime("%Y-%m-%d %H:%M:%S"))
    page.fill("input[name=created_from]", "31/01/2026 2pm")
    page.click("form.filters button[type=submit]")
    assert page.evaluate("document.querySelector('input[name=created_from]').validationMessage").startswith(
        f"Write it as YYYY-MM-DD HH:MM ({TIME_ZONE_OFFSET})"
    )
    assert_clean(page)


def test_a_task_with_a_future_start_is_scheduled_not_running(page, live, tasks):
    start = time.time() + 3600
    task_id = live.submit(start_at=start, name="later_db")
    sign_in(page)
    status = row(page, task_id).locator(".c-status")
    expect(status.locator(".badge")).to_have_text("Scheduled")
    starts = datetime.fromtimestamp(int(start), ZoneInfo(TIME_ZONE)).strftime("%Y-%m-%d %H:%M:%S")
    expect(status).to_contain_text(f"starts at {starts} {TIME_ZONE_OFFSET}")
    expect(row(page, task_id).locator(".seg.st-running")).to_have_count(0)
    expect(row(page, task_id).locator(".seg.st-scheduled")).to_have_count(1)  # step 0, in the legend's colour
    expect(row(page, task_id).locator(".st-running")).to_have_count(0)
    save_screenshot(page, page.shots, "op-scheduled-list")
    row(page, task_id).locator("a.task-link").click()
    expect(page.locator(".task-head .badge")).to_have_text("Scheduled")
    expect(page.locator(".facts")).to_contain_text(f"starts at {starts} {TIME_ZONE_OFFSET}")
    first = page.locator(".timeline > li.step").nth(0)
    expect(first.locator(".outcome-badges")).to_have_text("scheduled")
    expect(first.locator(".phase-normal .active-run")).to_have_text(
        re.compile(rf"^scheduled: starts at {starts}")
    )
    expect(page.locator(".task-head .st-running, .timeline .st-running")).to_have_count(0)
    expect(page.locator(".timeline + .legend")).to_contain_text("scheduled (waits for its start time)")
    expect(page.locator(".action").first).to_contain_text("No step has run yet: the task ends now")
    save_screenshot(page, page.shots, "op-scheduled-task")
    # Cancelled, so it does not sit in the list of the tests after this one.
    assert live.act(task_id, "cancel", "only a test").status_code == 200
    assert_clean(page)


def fits(page, table: str) -> None:
    """The table ends inside its card (the task page's card, or the list's main column), nothing
    in it sticks out of its cell, and the page has no sideways scroll."""
    expect(page.locator(table).first).to_be_visible()
    widths = page.evaluate(
        """(selector) => {
            const table = document.querySelector(selector);
            const card = table.closest(".card") ?? table.closest("main");
            const style = getComputedStyle(card);
            const inner = card.getBoundingClientRect().right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
            const right = (e) => e.getBoundingClientRect().right;
            const out = [...table.querySelectorAll("*")].filter((e) => right(e) > inner + 0.5);
            const cells = [...table.querySelectorAll("td > *")].filter((e) => right(e) > right(e.closest("td")) + 0.5);
            const name = (e) => `${e.tagName}.${e.className}: ${e.textContent.slice(0, 40)}`;
            return {page: document.documentElement.scrollWidth, view: window.innerWidth,
                    table: right(table), card: inner, wider: table.scrollWidth - table.clientWidth,
                    out: out.slice(0, 3).map(name), spilled: cells.slice(0, 3).map(name)};
        }""",
        table,
    )
    assert widths["page"] <= widths["view"], (table, widths)
    assert widths["table"] <= widths["card"] + 0.5, (table, widths)
    assert widths["out"] == [] and widths["wider"] <= 0, (table, widths)
    assert widths["spilled"] == [], (table, widths)


def test_the_tables_fit_their_card_at_every_width(page, live, tasks):
    sign_in(page)
    expect(page.locator("tr.task-row").first).to_be_visible()
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto("/console/#/tasks")
        fits(page, "table.tasks")
        expect(page.locator("tr.task-row .badge").first).to_be_visible()
        save_screenshot(page, page.shots, f"op-list-{width}")
        page.goto(f"/console/#/task/{tasks['flaky']}")
        fits(page, "table.history")
        save_screenshot(page, page.shots, f"op-task-{width}")
        page.goto("/console/#/alarms?all=1")
        fits(page, "table.alarms")
        save_screenshot(page, page.shots, f"op-alarms-{width}")
    assert_clean(page)


def test_a_legend_explains_every_step_colour(page, tasks):
    sign_in(page)
    legend = page.locator(".results .legend")
    expect(legend).to_be_visible()
    explained = set(legend.locator(".swatch").evaluate_all("s => s.map(x => x.className.replace('swatch ', ''))"))
    used = set(page.locator(".progress .seg").evaluate_all("s => s.map(x => x.className.replace('seg ', ''))"))
    assert used and used <= explained
    for words in ("succeeded", "failed", "rolled back", "rollback failed", "compensated", "skipped", "running"):
        expect(legend).to_contain_text(words)
    page.goto(f"/console/#/task/{tasks['stuck']}")
    expect(page.locator(".timeline + .legend")).to_be_visible()
    assert_clean(page)


def test_an_alarm_shows_its_task_state_now_and_links_to_it(page, live, tasks):
    stuck = tasks["stuck"]
    live.store.add_alarm(Alarm(
        AlarmId=f"dl-{uuid.uuid4().hex[:8]}", Kind="dead_letter", Time=time.time(),
        Message="malformed step message: Attempt: missing", Module="mysql",
    ))  # fmt: skip
    sign_in(page, at="/console/#/alarms")
    alarm = page.locator("tr.alarm-row", has=page.locator(f'a[title="{stuck}"]'))
    expect(alarm.locator(".alarm-task .badge")).to_have_text("Rollback failed")
    assert live.act(stuck, "compensate", "dropped the database by hand").status_code == 200
    live.wait_final(stuck)
    # Still open (nobody acknowledged it), but it says its task needs nothing any more.
    expect(alarm.locator(".alarm-task .badge")).to_have_text("Failed · rolled back")
    expect(alarm.locator(".settled")).to_have_text("dealt with since: nothing left to do")
    dead = page.locator("tr.alarm-row", has_text="malformed step message").first
    expect(dead.locator("a.alarm-link")).to_have_text("tasks in flight (mysql) →")
    save_screenshot(page, page.shots, "op-alarms-task-state")
    alarm.locator("a.alarm-link").click()
    expect(page.locator(".task-head code.id")).to_have_text(stuck)
    page.go_back()
    dead.locator("a.alarm-link").click()
    expect(page).to_have_url(re.compile(r"#/tasks\?status=2$"))
    assert_clean(page)


def test_alarms_are_acknowledged_together_with_a_reason(page, live, tasks):
    ids = [f"bulk-{uuid.uuid4().hex[:8]}" for _ in range(3)]
    for n, alarm_id in enumerate(ids):
        live.store.add_alarm(Alarm(
            AlarmId=alarm_id, Kind="dead_letter", Time=time.time() + n,
            Message=f"bulk test {n}", TaskId=tasks["ok"], Module="resource",
        ))  # fmt: skip
    sign_in(page, at="/console/#/alarms")
    alarm = lambda alarm_id: page.locator(f'tr.alarm-row[data-alarm-id="{alarm_id}"]')  # noqa: E731
    expect(alarm(ids[0])).to_be_visible()
    expect(page.locator("#ack-selected")).to_be_disabled()
    alarm(ids[0]).locator("input.tick").check()
    alarm(ids[2]).locator("input.tick").check()
    expect(page.locator("#ack-selected")).to_have_text("Acknowledge selected (2)…")
    page.click("#ack-selected")
    give_reason(page, "replayed the messages by hand", "op-alarms-bulk-dialog")
    expect(page.locator(".banner.ok")).to_have_text("2 alarms acknowledged.")
    expect(alarm(ids[0])).to_have_count(0)
    expect(alarm(ids[2])).to_have_count(0)
    expect(alarm(ids[1])).to_be_visible()
    page.locator("nav.tabs a", has_text="All").click()
    expect(alarm(ids[0]).locator(".acked")).to_contain_text("acknowledged by olga")
    expect(alarm(ids[0]).locator(".acked")).to_contain_text(": replayed the messages by hand")
    expect(alarm(ids[1]).locator("button", has_text="Acknowledge")).to_be_visible()
    save_screenshot(page, page.shots, "op-alarms-bulk-done")
    assert_clean(page)


def test_search_by_task_id_or_text_with_counts_per_status(page, live, tasks):
    sign_in(page)
    expect(row(page, tasks["ok"])).to_be_visible()
    answer = live.api.get("/api/v1/tasks").json()
    expect(page.locator(".counts .total .n")).to_have_text(str(answer["total"]))
    for name, count in answer["counts"].items():
        expect(page.locator(f'.counts .count[data-status="{name}"] .n')).to_have_text(str(count))
    save_screenshot(page, page.shots, "op-counts")

    flaky = tasks["flaky"]
    page.fill("#f-q", flaky[:7])  # the start of an id
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(rf"#/tasks\?q={flaky[:7]}$"))
    expect(row(page, flaky)).to_be_visible()
    expect(page.locator("tr.task-row")).to_have_count(
        sum(t["TaskId"].startswith(flaky[:7]) for t in answer["items"])
    )
    expect(page.locator(".counts .total")).to_contain_text("match")

    page.fill("#f-q", "INIT_INSTANCE")  # text of a message (the flaky task's is about charge)
    page.click("form.filters button[type=submit]")
    expect(page.locator(".counts .total .n")).to_have_text("0")
    page.fill("#f-q", "deduct_resource")  # every task whose charge step failed
    page.click("form.filters button[type=submit]")
    expect(row(page, tasks["rolled_back"])).to_be_visible()
    expect(row(page, tasks["ok"])).to_have_count(0)
    shown = page.locator("tr.task-row").count()
    expect(page.locator(".counts .total .n")).to_have_text(str(shown))
    # A count narrows the search to its status, and the search is kept.
    page.locator('.counts .count[data-status="ROLLED_BACK"]').click()
    expect(page).to_have_url(re.compile(r"#/tasks\?q=deduct_resource&status=4$"))
    expect(page.locator("tr.task-row .badge").first).to_have_text(re.compile("rolled back"))
    save_screenshot(page, page.shots, "op-search")
    assert_clean(page)


def test_a_task_shows_the_version_of_the_flow_it_runs(page, live, tasks):
    """The content hash of its task type's definition, and the flows.yaml `version:` when given."""
    task = live.store.get(tasks["ok"])
    assert task is not None and task.FlowHash
    sign_in(page, at=f"/console/#/task/{tasks['ok']}")
    fact = page.locator(".task-head dl.facts > div", has=page.locator("dt", has_text="Flow version"))
    expect(fact.locator("dd")).to_contain_text(task.FlowHash)
    if task.FlowVersion:
        expect(fact.locator("dd")).to_contain_text(task.FlowVersion)
    assert_clean(page)
