"""Fixtures of the console tests. The API-level ones use the API tests' app (SQLite store,
in-process broker); the browser ones share one served OSS (live.py) and one headless Chromium
for the whole run, and give each test a fresh browser context (its own sessionStorage: it signs
in again) in a time zone east of UTC with a half-hour offset, so a time shown without its zone,
or in UTC, would be seen."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.conftest import api  # noqa: F401
from tests.console.browser import TIMEOUT_MS, TIME_ZONE, launch
from tests.console.live import LiveConsole, live_console
from tests.support.cluster import STATE_DEADLINE
from tests.support.services import require
from tests.support.threads import no_baton_thread_outlives_the_session  # noqa: F401  (tests/support/threads.py says why)

try:
    from playwright.sync_api import Page, expect, sync_playwright
except ImportError:  # pragma: no cover - the package is in requirements.lock
    sync_playwright = None


@pytest.fixture(scope="session")
def live(tmp_path_factory) -> Iterator[LiveConsole]:
    # Most of these tests check what the console draws per item of a for_each step (the graph's
    # marks, the timeline) from a task's inline items, so the served OSS opens for_each steps
    # with their items inline; the views of items kept in records (counts, paged items) are
    # tested on tasks built that way (test_browser_items.py). This choice is the process's
    # for the whole session: tests/conftest.py gives every test of the other tiers the default.
    from common.engine.kinds.for_each import records as fan_out

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fan_out, "RECORDS_ENABLED", False)
        with live_console(tmp_path_factory.mktemp("console")) as live:
            yield live


# One browser per test module, not per session: Playwright's sync API runs an event loop on the
# main thread until it stops, and a later test of the same worker that starts its own loop
# (asyncio.run, the async client) would find that one running.
@pytest.fixture(scope="module")
def browser():
    require(sync_playwright is not None, "the playwright package is not installed")
    playwright, browser = launch(sync_playwright)
    try:
        yield browser
    finally:
        browser.close()
        playwright.stop()


@pytest.fixture
def page(browser, live, tasks, tmp_path) -> Iterator["Page"]:
    """`tasks` is the test module's own fixture: the tasks it looks at, run to their end."""
    context = browser.new_context(
        viewport={"width": 1360, "height": 900}, base_url=live.url, timezone_id=TIME_ZONE
    )
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)  # a busy CI machine: the page polls every 1.5-3 s
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on(
        "console",
        lambda msg: problems.append(f"console: {msg.text}") if msg.type == "error" else None,
    )
    page.problems = problems  # type: ignore[attr-defined]
    page.shots = tmp_path  # type: ignore[attr-defined]
    yield page
    context.close()


# The suite's per-test guard (pytest-timeout, pyproject.toml) counts a test's fixture setup: the first
# browser test of a worker starts the served OSS, the browser and its module's tasks, each
# waiting up to STATE_DEADLINE for its state, so on a loaded machine a passing one went past it.
BROWSER_TEST_TIMEOUT = 4 * STATE_DEADLINE


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents and "page" in getattr(item, "fixturenames", ()) \
                and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(BROWSER_TEST_TIMEOUT))
