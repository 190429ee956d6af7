"""Every baton thread a test module starts has ended once the module's fixtures are torn down.

A thread left running (a TaskService whose publisher was never stopped, a Sweeper never closed)
goes on using a store its test has closed, and writes its failures into whatever the tests after
it capture: a later CLI test in the same worker then finds a "store is closed" warning in its
output. baton names its threads "baton-..." (common, oss, modules): those are what is counted.
A tier's conftest.py imports the fixture to turn the check on for its modules (or, where its
modules share one service started once, for its session).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.cluster import STATE_DEADLINE

PREFIX = "baton-"
# A stop that was asked for ends well within 10 s on a quiet machine (the stop sequences' own
# joins); the wait for the threads' end goes on to STATE_DEADLINE, as every wait for a state.
GRACE_SECONDS = STATE_DEADLINE


def baton_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(PREFIX) and t.is_alive()}


def _outlives(what: str) -> Iterator[None]:
    before = baton_threads()
    yield
    deadline = time.monotonic() + GRACE_SECONDS
    for thread in baton_threads() - before:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = sorted(t.name for t in baton_threads() - before)
    assert not left, f"threads still running after the {what}'s teardown: {left} (stop what the test started)"


@pytest.fixture(scope="module", autouse=True)
def no_baton_thread_outlives_the_module() -> Iterator[None]:
    yield from _outlives("module")


@pytest.fixture(scope="session", autouse=True)
def no_baton_thread_outlives_the_session() -> Iterator[None]:
    """For a tier whose test modules share one running service (a session fixture): its pools
    and timers start threads on first use, during whichever module uses them first, and stop
    with the session."""
    yield from _outlives("session")
