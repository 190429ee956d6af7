"""SIGTERM / Ctrl-C turned into a threading.Event, without a deadlock.

A Python signal handler runs in the main thread between two bytecodes, possibly while that same
thread holds the lock inside `stop.wait()` (Condition.wait re-acquires it before returning). A
handler that calls `stop.set()` then waits for a lock its own thread holds: the process hangs
forever on SIGTERM (seen as `make run` not stopping, about one run in several). So the handler
only writes a byte to a pipe, which takes no Python lock, and a small thread sets the event.
"""

from __future__ import annotations

import os
import signal
import threading
import time

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(stop: threading.Event, *, second_exits_after: float | None = None) -> None:
    """Set `stop` at the first SIGTERM or SIGINT.

    With `second_exits_after`, another signal arriving later than that many seconds after the
    first ends the process at once (an impatient Ctrl-C); sooner it is the same request delivered
    twice (to a process group, and again by `make`)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    first: list[float] = []

    def handle(signum: int, _frame: object) -> None:
        if second_exits_after is not None and first and time.monotonic() - first[0] > second_exits_after:
            os._exit(130 if signum == signal.SIGINT else 143)
        if not first:
            first.append(time.monotonic())
        try:
            os.write(write_end, b"\0")
        except BlockingIOError:  # the pipe is full of earlier signals: the event is on its way
            pass

    def relay() -> None:
        os.read(read_end, 1)
        stop.set()

    threading.Thread(target=relay, name="baton-signals", daemon=True).start()
    for signum in SIGNALS:
        signal.signal(signum, handle)

