"""The pool of an async command's blocking hand-offs (common/runtime/offload.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading

import pytest

from common.runtime.offload import DaemonThreadPool
from tests.support.cluster import REPO


def test_the_event_loop_takes_it_as_its_default_executor_and_gets_answers_and_errors():
    pool = DaemonThreadPool(2)
    loop = asyncio.new_event_loop()
    loop.set_default_executor(pool)

    async def hand_off() -> tuple[str, str]:
        name = await loop.run_in_executor(None, lambda: threading.current_thread().name)
        with pytest.raises(ZeroDivisionError):
            await loop.run_in_executor(None, lambda: 1 / 0)
        return name, "after"

    # In a thread of its own: a browser test sharing this pytest worker keeps an event loop running
    # on the main thread (Playwright's sync API) for the whole session.
    answers: list[tuple[str, str]] = []
    runner = threading.Thread(target=lambda: answers.append(loop.run_until_complete(hand_off())))
    try:
        runner.start()
        runner.join(60)
        assert answers == [("baton-offload_0", "after")]
    finally:
        loop.close()
        pool.shutdown()


def test_it_grows_to_its_limit_and_no_further():
    pool = DaemonThreadPool(3)
    release = threading.Event()
    futures = [pool.submit(release.wait, 10) for _ in range(5)]
    try:
        assert len(pool._threads) == 3  # two calls wait for a thread
    finally:
        release.set()
    assert [f.result(10) for f in futures] == [True] * 5
    pool.shutdown()


def test_shutdown_cancels_what_waits_and_refuses_more():
    pool = DaemonThreadPool(1)
    release = threading.Event()
    running = pool.submit(release.wait, 10)
    waiting = pool.submit(lambda: "never")
    pool.shutdown(wait=False, cancel_futures=True)
    release.set()
    assert running.result(10) is True and waiting.cancelled()
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)


def test_a_call_that_never_returns_does_not_keep_the_process_from_exiting():
    program = (
        "import threading\n"
        "from common.runtime.offload import DaemonThreadPool\n"
        "pool = DaemonThreadPool(1)\n"
        "pool.submit(threading.Event().wait)\n"
        "pool.shutdown(wait=False)\n"
    )
    # The standard library's pool would join the hung thread at exit: the timeout would expire.
    done = subprocess.run([sys.executable, "-c", program], cwd=REPO, timeout=60, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
