"""Headless Chromium (Debian's /usr/bin/chromium) driven by Playwright's Python package.

Playwright's own browser downloads are not used (`playwright install` is never run): the
system Chromium is launched by path. Without the package or the browser the tests skip on a
laptop and FAIL under CI=true (tests.support.services.require).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tests.console.live import OPERATOR
from tests.support.cluster import STATE_DEADLINE
from tests.support.services import require

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"  # gitignored
SECRET = "Hunter2-Correct-Horse-Battery"
# How long an expectation waits for the page to reach its state: the suite's one deadline for a
# state (a loaded machine drew a page in over 10 s); only a broken test waits it out.
TIMEOUT_MS = int(STATE_DEADLINE * 1000)
TIME_ZONE = "Asia/Kolkata"  # +05:30 all year: neither UTC nor a whole hour
TIME_ZONE_OFFSET = "+05:30"


def launch(playwright_factory: Any) -> tuple[Any, Any]:
    """(playwright, browser), or a skip / CI failure saying what is missing."""
    require(CHROMIUM.exists(), f"{CHROMIUM} missing: apt-get install -y chromium")
    playwright = playwright_factory().start()
    try:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=ARGS, timeout=30_000
        )
    except Exception as exc:  # a broken install: say why, once
        playwright.stop()
        require(False, f"{CHROMIUM} does not start: {exc}")
        raise
    return playwright, browser


def save_screenshot(page: Any, directory: Path, name: str) -> Path:
    """A full-page PNG in the test's directory, and a copy in tests/artifacts/ to look at."""
    path = directory / f"console-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(path, ARTIFACTS / path.name)
    return path


def sign_in(page: Any, token: str = OPERATOR, at: str = "/console/") -> None:
    page.goto(at)
    page.fill("#token", token)
    page.click("form.login button[type=submit]")


def assert_clean(page: Any) -> None:
    """No secret in the DOM or the visible text, no token in the URL, no script error."""
    assert SECRET not in page.content()
    assert SECRET not in page.inner_text("body")
    assert OPERATOR not in page.url
    assert page.problems == []


def row(page: Any, task_id: str) -> Any:
    return page.locator(f'tr.task-row[data-task-id="{task_id}"]')


def give_reason(page: Any, reason: str, screenshot: str) -> None:
    """In the open reason dialog: no reason is refused (the dialog stays), then this one is sent."""
    from playwright.sync_api import expect

    page.click("#reason-dialog button[type=submit]")
    expect(page.locator("#reason-dialog")).to_be_visible()
    page.fill("#reason-dialog textarea", reason)
    save_screenshot(page, page.shots, screenshot)
    page.click("#reason-dialog button[type=submit]")
