"""The task page follows a running task over Server-Sent Events, in a real browser: the page is
read once, then every change arrives on the stream (no polling, no reload), with the token in
a header, never in a URL."""

from __future__ import annotations

import time

import pytest

from tests.console.browser import OPERATOR, SECRET, assert_clean, sign_in
from tests.console.live import LiveConsole
from tests.support.cluster import STATE_DEADLINE, wait_until

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    return {}


def test_a_running_task_updates_on_its_page_from_the_event_stream(page, live, tasks):
    requests: list = []
    page.on("request", lambda request: requests.append(request))
    # The task waits until its page is drawn: its create step is held by a drained module, and
    # the undrain comes once the page shows the task held (a start time a few seconds away was
    # passed before a loaded machine drew the page, which then read a finished task).
    assert live.api.post("/api/v1/modules/mysql/drain", json={"reason": "until the page is drawn"}).status_code == 200
    try:
        time.sleep(1.2)  # a module reads its drain record at most once a second
        task_id = live.submit(name="streamed_db", admin_password=SECRET)
        wait_until(lambda: live.held(task_id), STATE_DEADLINE, "the create step held by the drain")
        sign_in(page, at=f"/console/#/task/{task_id}")
        expect(page.locator(".task-head")).to_contain_text("Running · waiting for drain")
    finally:
        assert live.api.post("/api/v1/modules/mysql/undrain", json={"reason": "drawn"}).status_code == 200
    expect(page.locator(".task-head .badge")).to_have_text("Succeeded")
    expect(page.locator("table.history tr", has_text="task_success")).to_have_count(1)
    expect(page.locator("table.history tr", has_text="drain_released")).to_have_count(1)

    task_path = f"/api/v1/tasks/{task_id}"
    reads = [r for r in requests if r.url.endswith(task_path)]
    streams = [r for r in requests if r.url.endswith(f"{task_path}/events")]
    assert len(reads) == 1, "one read draws the page; then the stream brings every change"
    assert streams and all(s.headers.get("authorization") == f"Bearer {OPERATOR}" for s in streams)
    assert all(OPERATOR not in r.url for r in requests)
    assert_clean(page)
