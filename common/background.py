"""Stopping a process's background threads before the stores they use are closed.

A thread still working on a store (SQLite above all) while the main thread closes it can crash
the process (a segmentation fault, not an exception). So a process sets its stop event, joins
every thread it started within one deadline, and closes its stores only when all of them ended;
otherwise it says which did not and leaves the stores to the process's exit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

import structlog

log = structlog.get_logger(__name__)
# A background round in progress finishes before its thread ends: a MySQL connect or a store call
# may take its own timeout on top of the shutdown grace period.
BACKGROUND_MARGIN_SECONDS = 15.0


def join_all(threads: Iterable[threading.Thread | None], timeout: float) -> bool:
    """Join each started thread within one shared deadline; True when every one ended."""
    deadline = time.monotonic() + timeout
    alive = []
    for thread in threads:
        if thread is None or thread is threading.current_thread():
            continue
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            alive.append(thread.name)
    if alive:
        log.error("background threads did not stop in time; the stores are left to the process's exit",
                  threads=alive, waited=timeout)  # fmt: skip
    return not alive
