"""Planning a task in the web console: the Plan view asks the API for a dry run and shows when
the task would start (here: once a lock another task keeps is free), its steps, the locks with
their holders and the modules with their liveness, and creates nothing."""

from __future__ import annotations

import json

import pytest

from tests.console.browser import assert_clean, save_screenshot, sign_in
from tests.console.live import FAIL_CHARGE, FAIL_CLEAN, LiveConsole

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(live: LiveConsole):
    holder = live.submit("locked_db", name="planned_one", _baton_faults=FAIL_CHARGE + FAIL_CLEAN)
    live.wait_final(holder)  # rollback failed: it keeps the lock
    yield {"holder": holder}
    assert live.act(holder, "compensate", "test over").status_code == 200
    live.wait_final(holder)


def test_the_plan_view_shows_what_a_task_would_wait_for_and_creates_nothing(page, live, tasks):
    before = live.api.get("/api/v1/tasks", params={"limit": 500}).json()["items"]
    sign_in(page, at="/console/#/plan")
    expect(page.locator("#plan-type option[value=locked_db]")).to_have_count(1)
    page.select_option("#plan-type", "locked_db")
    page.fill("#plan-parameters", json.dumps({"name": "planned_one"}))
    page.click("#plan-go")
    expect(page.locator("#plan-start h2")).to_have_text("Starts: Once its lock is free")
    expect(page.locator("#plan-locks")).to_contain_text(f"held by {tasks['holder']}")
    expect(page.locator("#plan-steps tr[data-step=create]")).to_contain_text("mysql.init_instance")
    expect(page.locator("#plan-steps tr[data-step=charge]")).to_contain_text("resource.restore_resource")
    # The live console's in-process modules do not announce themselves: the plan says so.
    expect(page.locator("#plan-modules tbody tr").first).to_contain_text("mysqlnot live")
    expect(page.locator("#plan-warnings")).to_contain_text("module mysql has no live worker")
    save_screenshot(page, page.shots, "plan")
    # A refused request shows the API's field errors, and nothing else happens.
    page.fill("#plan-parameters", "{}")
    page.click("#plan-go")
    expect(page.locator("#plan-result .banner.error")).to_contain_text("parameters.name")
    after = live.api.get("/api/v1/tasks", params={"limit": 500}).json()["items"]
    assert [t["TaskId"] for t in after] == [t["TaskId"] for t in before]
    page.problems[:] = [p for p in page.problems if "422" not in p]  # type: ignore[attr-defined]  (the browser logs the refusal)
    assert_clean(page)
