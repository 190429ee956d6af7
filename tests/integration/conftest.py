"""Every baton thread a test module starts has ended once the module's fixtures are torn down.

A thread left running (a TaskService whose publisher was never stopped, say) goes on using a
store its test has closed, and writes its failures into whatever the tests after it capture:
a later CLI test in the same worker then finds a "store is closed" warning in its output.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.support.threads import baton_threads

GRACE_SECONDS = 10.0  # a stop that was asked for ends well within this (the stop sequences' own joins)


@pytest.fixture(scope="module", autouse=True)
def _no_baton_thread_outlives_the_module() -> Iterator[None]:
    before = baton_threads()
    yield
    deadline = time.monotonic() + GRACE_SECONDS
    for thread in baton_threads() - before:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = sorted(t.name for t in baton_threads() - before)
    assert not left, f"threads still running after the module's teardown: {left} (stop what the test started)"
