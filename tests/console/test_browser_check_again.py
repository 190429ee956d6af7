"""Check again later in the console and the API (docs/design/operations.md): while a step's command
keeps answering "not done yet", its task page shows the progress message and since when it waits, in
the step list and the graph; the API's task view carries them, and its attempts show one attempt
"checking again", not one per check. Real browser, real served OSS (live.py)."""

from __future__ import annotations


import pytest

from common.engine.states import StepState, TaskStatus
from tests.console.browser import assert_clean, save_screenshot, sign_in
from tests.console.live import LiveConsole
from tests.support.cluster import STATE_DEADLINE, wait_until

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks() -> dict[str, str]:
    return {}  # each test here makes its own


def _checked_twice(live: LiveConsole, task_id: str) -> None:
    wait_until(lambda: sum(e.Event == "check_again" for e in live.store.get(task_id).History) >= 2, STATE_DEADLINE,
               f"task {task_id} checked again twice")  # fmt: skip


def test_a_waiting_step_shows_its_progress_in_the_api_and_on_its_page(page, live):
    task_id = live.submit("await_replica")
    _checked_twice(live, task_id)

    shown = live.api.get(f"/api/v1/tasks/{task_id}").json()
    step = shown["Steps"][0]
    assert step["Progress"] == "replica 73% caught up" and step["State"] == "running"
    assert isinstance(step["WaitingSince"], float) and step["Attempts"] == 1
    attempts = [a for a in shown["Attempts"] if a["Cursor"] == 0]
    assert len(attempts) == 1 and attempts[0]["Outcome"] in ("checking again", "running")

    sign_in(page, at=f"/console/#/task/{task_id}")
    note = page.locator('.timeline li.step[data-step="0"] .progress-note')
    expect(note).to_contain_text("not done yet, waiting since")
    expect(note.locator(".progress-text")).to_have_text("replica 73% caught up")
    node = page.locator('svg.flow-graph g.node[data-step="0"]')
    expect(node.locator("text.state")).to_contain_text("checking again")
    expect(node.locator("title")).to_contain_text("replica 73% caught up")
    save_screenshot(page, page.shots, "check-again")

    assert live.act(task_id, "cancel", "the replica will not catch up").status_code == 200
    task = live.wait_final(task_id)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK and task.Steps[0].State is StepState.ROLLED_BACK
    expect(page.locator(".task-head .badge")).to_contain_text("rolled back")
    expect(note).to_have_count(0)  # waiting no more
    assert_clean(page)
