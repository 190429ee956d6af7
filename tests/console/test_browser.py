"""The web console in a real browser (headless Chromium): the list with statuses, filters and
pages, a task that rolled back and its timeline, retry on a failed task, an action the API
refuses (409) shown as such, compensate, alarms, a wrong token; and never a secret on a page.

One OSS (uvicorn, real module runtimes, see live.py) and one browser for the run (conftest.py);
each test gets a fresh browser context (its own sessionStorage: it signs in again).
test_browser_operator.py checks what an operator reads: outcomes, attempts, times, search.
"""

from __future__ import annotations

import re

import pytest

from tests.console.browser import SECRET, assert_clean, give_reason, row, save_screenshot, sign_in
from tests.console.live import FAIL_CHARGE, FAIL_CLEAN, OPERATOR, READER, LiveConsole

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    """One task in each final state the console must tell apart, run by the module runtimes."""
    made = {
        "ok": live.submit(name="good_db", admin_password=SECRET),
        "rolled_back": live.submit(name="bad_db", admin_password=SECRET, _baton_faults=FAIL_CHARGE),
        "to_retry": live.submit(name="retry_db", admin_password=SECRET, _baton_faults=FAIL_CHARGE),
        "to_compensate": live.submit(
            name="stuck_db", admin_password=SECRET, _baton_faults=FAIL_CHARGE + FAIL_CLEAN
        ),
        "raced": live.submit(
            name="raced_db", admin_password=SECRET, _baton_faults=FAIL_CHARGE + FAIL_CLEAN
        ),
    }
    for task_id in made.values():
        live.wait_final(task_id)
    return made


def test_the_list_shows_every_task_with_its_status_newest_first(page, live, tasks):
    sign_in(page)
    expect(page.locator("h1")).to_have_text("Tasks")
    expect(row(page, tasks["ok"]).locator(".badge")).to_have_text("Succeeded")
    # The two kinds of failure are told apart, in words and in colour.
    expect(row(page, tasks["rolled_back"]).locator(".badge")).to_have_text("Failed · rolled back")
    expect(row(page, tasks["to_compensate"]).locator(".badge")).to_have_text("Rollback failed")
    assert "st-rolled-back" in row(page, tasks["rolled_back"]).locator(".badge").get_attribute(
        "class"
    )
    assert "st-rollback-failed" in row(page, tasks["raced"]).locator(".badge").get_attribute(
        "class"
    )
    ids = page.locator("tr.task-row").evaluate_all("rows => rows.map(r => r.dataset.taskId)")
    submitted = list(tasks.values())
    assert [i for i in ids if i in submitted] == submitted[::-1]  # newest first
    expect(row(page, tasks["ok"])).to_contain_text("team=payments")
    expect(row(page, tasks["ok"])).to_contain_text("dana")
    save_screenshot(page, page.shots, "list")
    assert_clean(page)


def test_a_new_task_appears_and_runs_to_its_end_without_a_reload(page, live, tasks):
    sign_in(page)
    expect(row(page, tasks["ok"])).to_be_visible()
    task_id = live.submit(name="fresh_db", admin_password=SECRET)
    expect(row(page, task_id).locator(".badge")).to_have_text("Succeeded")
    assert_clean(page)


def test_filters_and_older_pages(page, live, tasks):
    sign_in(page)
    page.select_option("#f-status", "4")
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"#/tasks\?status=4$"))
    expect(row(page, tasks["rolled_back"])).to_be_visible()
    expect(row(page, tasks["ok"])).to_have_count(0)
    statuses = page.locator("tr.task-row .badge").all_inner_texts()
    assert statuses and set(statuses) <= {"Failed · rolled back", "Cancelled · rolled back"}

    page.goto("/console/#/tasks?limit=2")  # two a page: the cursor links walk back in time
    expect(page.locator("a.older")).to_have_attribute("href", re.compile(r"\?limit=2&cursor="))
    seen: list[str] = []
    while True:
        # Rows and pager are drawn together: once the pager is there, the rows are this page's.
        expect(page.locator(".pager")).to_be_visible()
        shown = page.locator("tr.task-row").evaluate_all("rows => rows.map(r => r.dataset.taskId)")
        seen += shown
        older = page.locator("a.older")
        if older.count() == 0:
            break
        href = older.get_attribute("href")
        older.click()
        expect(page).to_have_url(re.compile(re.escape(href) + "$"))
        expect(page.locator("tr.task-row").first).not_to_have_attribute("data-task-id", shown[0])
    assert len(seen) == len(set(seen)) and set(tasks.values()) <= set(seen)
    assert_clean(page)


def test_a_rolled_back_task_shows_its_rollback_timeline(page, live, tasks):
    sign_in(page)
    row(page, tasks["rolled_back"]).locator("a.task-link").click()
    expect(page.locator(".task-head .badge")).to_have_text("Failed · rolled back")
    expect(page.locator(".task-message")).to_contain_text(
        "step 3 (charge) failed: injected failure in deduct_resource"
    )
    steps = page.locator(".timeline > li.step")
    expect(steps).to_have_count(4)
    states = steps.evaluate_all("items => items.map(i => i.dataset.state)")
    assert states == ["skipped", "rolled_back", "rolled_back", "rolled_back"]
    charge = steps.nth(3)
    expect(charge.locator(".phase-normal .code")).to_have_text("failed")
    expect(charge.locator(".phase-normal .phase-message")).to_have_text(
        "injected failure in deduct_resource"
    )
    for index in (1, 2, 3):  # each rolled back step ran its rollback phase, and it went fine
        expect(steps.nth(index).locator(".phase-rollback .code")).to_have_text("rolled back")
        expect(steps.nth(index).locator(".phase-rollback .attempts")).to_have_text("attempts 1/1")
    expect(steps.nth(0).locator(".phase-rollback")).to_contain_text("none declared")
    history = page.locator("table.history")
    for event in ("created", "step_failed", "rollback_succeeded", "task_rolled_back"):
        expect(history).to_contain_text(event)
    # The secret parameter is shown masked, the others as they are.
    expect(page.locator("table.params")).to_contain_text("admin_password")
    expect(page.locator("table.params .secret")).to_have_text("***")
    expect(page.locator("table.params .tag")).to_have_text("secret")
    expect(page.locator("table.params")).to_contain_text("bad_db")
    # A rolled back task may be retried, or run again with the step that failed skipped.
    assert page.locator("[data-action]").evaluate_all("b => b.map(x => x.dataset.action)") == [
        "retry", "skip"
    ]
    save_screenshot(page, page.shots, "task-rolled-back")
    assert_clean(page)


def test_retry_on_a_failed_task_changes_its_state(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['to_retry']}")
    expect(page.locator(".task-head .badge")).to_have_text("Failed · rolled back")
    page.click("[data-action=retry]")
    page.fill("#reason-dialog textarea", "the capacity service is back")
    page.click("#reason-dialog button[type=submit]")
    # The API's answer: the task runs again (from step 0, as a new generation).
    expect(page.locator(".banner.ok")).to_have_text(
        re.compile(
            r"^Retry done: the task is now (Not started \(NOT_STARTED\)|Running \(RUNNING\))\.$"
        )
    )
    # The page follows the task: the retry is in its history with who and why, and the fault
    # in its submitted parameters fails step 3 again, which rolls back again.
    retried = page.locator("table.history tr", has_text="retried")
    expect(retried).to_contain_text("olga")
    expect(retried).to_contain_text("the capacity service is back")
    expect(page.locator("table.history tr", has_text="task_rolled_back")).to_have_count(2)
    expect(page.locator(".task-head .badge")).to_have_text("Failed · rolled back")
    expect(page.locator(".facts")).to_contain_text("retried 1×")
    save_screenshot(page, page.shots, "task-after-retry")
    assert_clean(page)


def test_compensate_asks_why_and_the_rollback_goes_on(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['to_compensate']}")
    expect(page.locator(".task-head .badge")).to_have_text("Rollback failed")
    assert page.locator("[data-action]").evaluate_all("b => b.map(x => x.dataset.action)") == [
        "retry-rollback", "compensate"]  # fmt: skip
    expect(page.locator(".timeline > li.step").nth(2)).to_have_attribute(
        "data-state", "rollback_failed"
    )
    save_screenshot(page, page.shots, "task-rollback-failed")
    page.click("[data-action=compensate]")
    give_reason(page, "dropped the database by hand", "reason-dialog")
    expect(page.locator(".banner.ok")).to_contain_text("Mark compensated done")
    expect(page.locator(".timeline > li.step").nth(2)).to_have_attribute(
        "data-state", "compensated"
    )
    expect(page.locator(".task-head .badge")).to_have_text("Failed · rolled back")
    assert_clean(page)


def test_an_action_the_api_refuses_shows_its_message(page, live, tasks):
    task_id = tasks["raced"]
    sign_in(page, at=f"/console/#/task/{task_id}")
    expect(page.locator("[data-action=retry-rollback]")).to_be_visible()
    # Another operator gets there first; this page has not seen it yet (a final task is not polled).
    assert live.act(task_id, "compensate", "done by hand").status_code == 200
    page.click("[data-action=retry-rollback]")
    page.fill("#reason-dialog textarea", "try once more")
    page.click("#reason-dialog button[type=submit]")
    expect(page.locator(".banner.error")).to_contain_text(
        "Retry rollback refused: 409 conflict: task is"
    )
    expect(page.locator(".banner.error")).to_contain_text(
        "only a ROLLBACK_FAILED task has a failed rollback"
    )
    # ...and then shows the task as it is now.
    expect(page.locator(".timeline > li.step").nth(2)).to_have_attribute(
        "data-state", "compensated"
    )
    save_screenshot(page, page.shots, "task-409")
    page.problems[:] = [p for p in page.problems if "409" not in p]  # type: ignore[attr-defined]
    assert_clean(page)


def test_alarms_are_listed_and_acknowledged(page, live, tasks):
    sign_in(page, at="/console/#/alarms")
    rows = page.locator("table.alarms tbody tr")
    expect(rows.first).to_be_visible()
    before = rows.count()
    assert before >= 2  # one per failed rollback
    expect(rows.first).to_contain_text("rollback failed")
    expect(rows.first).to_contain_text("mysql · clean_instance")
    save_screenshot(page, page.shots, "alarms")
    rows.first.locator("button", has_text="Acknowledge").click()
    expect(page.locator(".banner.ok")).to_contain_text("acknowledged")
    expect(rows).to_have_count(before - 1)
    page.locator("nav.tabs a", has_text="All").click()
    expect(page.locator("table.alarms")).to_contain_text("acknowledged by olga")
    assert_clean(page)


def test_a_wrong_token_is_told_clearly(page, live):
    sign_in(page, token="not-a-token-of-this-server")
    expect(page.locator("form.login .banner.error")).to_contain_text("That token was refused (401)")
    save_screenshot(page, page.shots, "wrong-token")
    assert page.evaluate("sessionStorage.length") == 0  # the wrong token is not kept
    page.problems[:] = [p for p in page.problems if "401" not in p]  # type: ignore[attr-defined]
    page.fill("#token", OPERATOR)
    page.click("form.login button[type=submit]")
    expect(page.locator("h1")).to_have_text("Tasks")
    assert_clean(page)


def test_a_read_only_token_sees_the_refusal_of_an_action(page, live, tasks):
    sign_in(page, token=READER, at=f"/console/#/task/{tasks['rolled_back']}")
    page.click("[data-action=retry]")
    page.fill("#reason-dialog textarea", "let me")
    page.click("#reason-dialog button[type=submit]")
    expect(page.locator(".banner.error")).to_have_text(
        "Retry refused: 403 forbidden: rita has the read role; this needs operator"
    )
    expect(page.locator(".task-head .badge")).to_have_text("Failed · rolled back")
    page.problems[:] = [p for p in page.problems if "403" not in p]  # type: ignore[attr-defined]
    assert_clean(page)


def test_a_parallel_task_shows_its_flow_as_a_graph_with_each_step_state(page, live):
    """The flow drawn as a graph, boxes coloured by step state, for_each items counted,
    a sub-flow linked to its child task (which links back)."""
    succeeded = live.wait_final(live.submit("fan_out", nodes=["n0", "n1", "n2"]))
    failed = live.wait_final(live.submit("fan_out", nodes=["n0", "n1", "n2"],
                                         _baton_faults=[{"command": "step_item", "action": "fail", "item": 1}]))
    sign_in(page, at=f"/console/#/task/{succeeded.TaskId}")
    graph = page.locator("svg.flow-graph")
    expect(graph.locator("g.node")).to_have_count(5)
    states = graph.locator("g.node").evaluate_all("g => g.map(n => n.dataset.state)")
    assert states == ["succeeded"] * 5
    expect(graph.locator("path.edge")).to_have_count(5)  # prepare->per_node, prepare->side, 2 into join, join->nested
    expect(graph.locator('g.node[data-step="1"] text.detail')).to_have_text("for_each nodes: 3/3")
    expect(graph.locator('g.node[data-step="1"] rect.item')).to_have_count(3)
    # Columns follow the graph: the two branches side by side, the join after both.
    xs = graph.locator("g.node").evaluate_all(
        "g => g.map(n => n.transform.baseVal.consolidate().matrix.e)")
    assert xs[1] == xs[2] and xs[0] < xs[1] < xs[3] < xs[4]
    labels = page.locator('.timeline li.step[data-step="1"] .attempt-no').evaluate_all("a => a.map(x => x.textContent)")
    assert sorted(labels) == ["item 0 · attempt 1", "item 1 · attempt 1", "item 2 · attempt 1"]
    save_screenshot(page, page.shots, "flow-graph-succeeded")
    graph.locator('g.node[data-step="4"] a.child-link').click()
    expect(page.locator(".task-head h1")).to_have_text("leaf")
    expect(page.locator("section.flow")).to_contain_text(f"A sub-flow of task {succeeded.TaskId}")
    page.goto(f"/console/#/task/{failed.TaskId}")
    graph = page.locator("svg.flow-graph")
    expect(graph.locator('g.node[data-step="1"]')).to_have_attribute("data-state", "rolled_back")
    items = graph.locator('g.node[data-step="1"] rect.item').evaluate_all("r => r.map(i => i.dataset.state)")
    assert items[1] == "rolled_back" and set(items) <= {"rolled_back", "cancelled", "waiting"}
    expect(graph.locator('g.node[data-step="3"]')).to_have_attribute("data-state", "waiting")
    save_screenshot(page, page.shots, "flow-graph-rolled-back")
    assert_clean(page)


def test_each_item_of_a_for_each_sub_flow_links_to_its_child_task(page, live):
    fleet = live.wait_final(live.submit("fleet", nodes=["n0", "n1", "n2"]))
    sign_in(page, at=f"/console/#/task/{fleet.TaskId}")
    marks = page.locator('svg.flow-graph g.node[data-step="0"] a.item-link rect.item')
    expect(marks).to_have_count(3)
    assert marks.evaluate_all("r => r.map(i => i.dataset.state)") == ["succeeded"] * 3
    page.locator('svg.flow-graph g.node[data-step="0"] a.item-link').nth(1).click()
    expect(page.locator(".task-head h1")).to_have_text("leaf")
    expect(page.locator("section.flow")).to_contain_text(f"A sub-flow of task {fleet.TaskId}")
    assert page.url.endswith(f"#/task/{fleet.TaskId}.0.1")
    assert_clean(page)


def test_the_filters_stay_put_when_the_task_types_arrive(page, live, tasks):
    """The type list arrives after the form is drawn: nothing may move under the pointer then
    (a click aimed at the failed-items box landed beside it when the type select widened)."""
    held = []
    signed_in = []

    def hold_the_form_s_call(route):
        if signed_in:
            held.append(route)  # the filter form's call: answered once the form is measured
        else:
            signed_in.append(route)  # the sign-in's call, which proves the token
            route.continue_()

    page.route("**/task-types", hold_the_form_s_call)
    sign_in(page)
    expect(page.locator("#f-failed-items")).to_be_visible()
    expect(page.locator("#f-type option")).to_have_count(1)
    fields = page.locator(".filters .field, .filters .filter-buttons")
    before = [fields.nth(i).bounding_box() for i in range(fields.count())]
    assert held, "the filter form asked for no task types"
    for route in held:
        route.continue_()
    expect(page.locator("#f-type option").nth(3)).to_be_attached()  # the task types are in
    assert [fields.nth(i).bounding_box() for i in range(fields.count())] == before
    assert_clean(page)
