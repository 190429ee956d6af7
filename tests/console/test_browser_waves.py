"""A rollout in waves in the console, in a real Chromium (docs/fan-out.md, "Waves"): the step's
line says which wave ended and that it waits for continue, the Continue button is drawn from the
task view's data; an operator's continue (with a reason) lets the next wave run and the task
succeed, the history saying who continued and why. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import time

import pytest

from common.engine.kinds.for_each import records as fan_out
from tests.console.browser import assert_clean, give_reason, save_screenshot, sign_in
from tests.console.live import LiveConsole
from tests.support.cluster import STATE_DEADLINE

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow
NODES = [f"n{i}" for i in range(5)]


def wait_paused(live: LiveConsole, task_id: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + max(timeout, STATE_DEADLINE)  # as tests.support.cluster.wait_until
    while time.monotonic() < deadline:
        wave = live.store.get(task_id).Steps[0].Wave
        if wave is not None and wave.Phase == "paused":
            return
        time.sleep(0.1)
    task = live.store.get(task_id)
    raise AssertionError(f"task {task_id} never paused: {task.TaskStatus.name} {task.TaskMessage}")


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    with pytest.MonkeyPatch.context() as patch:  # waves need the step's items in records
        patch.setattr(fan_out, "RECORDS_ENABLED", True)
        task_id = live.submit("patch_waves", nodes=NODES)
    wait_paused(live, task_id)
    return {"paused": task_id}


def test_a_paused_wave_shows_its_progress_and_continue_lets_the_next_wave_run(page, live, tasks):
    task_id = tasks["paused"]
    sign_in(page, at=f"/console/#/task/{task_id}")
    expect(page.locator("body")).to_contain_text("wave 1 of 2 ended (waits for continue; ended: 1 done)")
    expect(page.locator(".wave-note[data-phase=paused]")).to_have_text(
        "wave 1 of 2 ended: waits for an operator's continue (wave 1: 1 done)")
    expect(page.locator("[data-step-action=continue]")).to_be_visible()
    save_screenshot(page, page.shots, "wave-paused")
    page.click("[data-step-action=continue]")
    give_reason(page, "canary healthy", "continue-dialog")
    expect(page.locator(".banner.ok")).to_be_visible()
    expect(page.locator(".task-head .badge")).to_have_text("Succeeded", timeout=60_000)
    expect(page.locator("table.history tr", has_text="wave_continued")).to_contain_text("canary healthy")
    expect(page.locator("[data-step-action]")).to_have_count(0)
    expect(page.locator(".wave-note")).to_contain_text("wave 2 of 2 running (wave 1: 1 done)")
    save_screenshot(page, page.shots, "wave-continued")
    final = live.wait_final(task_id)
    assert final.Steps[0].Wave.Tallies == [[1, 0]]
    assert_clean(page)
