"""An approval step from the console, in a real browser (headless Chromium) on the live OSS: the
step's actions drawn as buttons from the task view's data, the reason dialog, a reader refused,
an operator's approval letting the flow go on, a rejection rolling the task back, and the
history saying who decided and why. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import pytest

from tests.console.browser import assert_clean, give_reason, save_screenshot, sign_in
from tests.console.live import READER, LiveConsole

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow
STEP_ACTIONS = "b => b.map(x => x.dataset.stepAction)"


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    return {"approve": live.submit("approved_db"), "reject": live.submit("approved_db")}


def test_a_reader_sees_the_step_actions_and_is_refused(page, live, tasks):
    task_id = tasks["approve"]
    sign_in(page, token=READER, at=f"/console/#/task/{task_id}")
    expect(page.locator("[data-step-action=approve]")).to_have_text("Approve ask")
    assert page.locator("[data-step-action]").evaluate_all(STEP_ACTIONS) == ["approve", "reject"]
    expect(page.locator(".facts")).to_contain_text("step ask: 1 more approval by operator")
    page.click("[data-step-action=approve]")
    give_reason(page, "looks fine to me", "approve-dialog-reader")
    expect(page.locator(".banner.error")).to_contain_text("rita has the read role; this needs submit")
    assert live.store.get(task_id).Steps[1].Decisions == []
    page.problems[:] = [p for p in page.problems if "403" not in p]  # type: ignore[attr-defined]  (the refusal's own)
    assert_clean(page)


def test_approve_from_the_console_lets_the_flow_go_on(page, live, tasks):
    task_id = tasks["approve"]
    sign_in(page, at=f"/console/#/task/{task_id}")
    page.click("[data-step-action=approve]")
    give_reason(page, "backup verified", "approve-dialog")
    expect(page.locator(".banner.ok")).to_be_visible()
    expect(page.locator(".task-head .badge")).to_have_text("Succeeded")
    given = page.locator("table.history tr", has_text="approval_given")
    expect(given).to_contain_text("olga")
    expect(given).to_contain_text("backup verified")
    expect(page.locator("[data-step-action]")).to_have_count(0)  # the step waits for nobody now
    save_screenshot(page, page.shots, "approval-given")
    assert [(d.Actor, d.Reason) for d in live.wait_final(task_id).Steps[1].Decisions] == [("olga", "backup verified")]
    assert_clean(page)


def test_reject_from_the_console_rolls_the_task_back(page, live, tasks):
    task_id = tasks["reject"]
    sign_in(page, at=f"/console/#/task/{task_id}")
    page.click("[data-step-action=reject]")
    give_reason(page, "not during the sale", "reject-dialog")
    expect(page.locator(".task-head .badge")).to_have_text("Failed · rolled back")
    expect(page.locator(".task-message")).to_contain_text("rejected by olga: not during the sale")
    expect(page.locator("table.history tr", has_text="approval_refused")).to_contain_text("olga")
    # Stored `skipped` once the rollback passed it (as older readers know it): it reads rejected.
    expect(page.locator('g.node[data-step="1"] text.state')).to_have_text("✖ rejected")
    expect(page.locator('li.step[data-step="1"] .step-head')).to_contain_text("rejected")
    save_screenshot(page, page.shots, "approval-refused")
    final = live.wait_final(task_id)
    assert [s.State for s in final.Steps] == ["rolled_back", "skipped", "waiting"]
    assert_clean(page)


def test_the_plan_view_describes_an_approval_step(page, live, tasks):
    # It runs no command and no child: the plan shows it as its kind describes it.
    sign_in(page, at="/console/#/plan")
    page.select_option("#plan-type", "approved_db")
    page.fill("#plan-parameters", "{}")
    page.click("#plan-go")
    expect(page.locator("#plan-steps tr[data-step=ask]")).to_contain_text("approval: 0/1 by operator")
    expect(page.locator("#plan-steps tr[data-step=create]")).to_contain_text("mysql.init_instance")
    assert_clean(page)
