"""SIGTERM stops a baton process even when it lands while the main thread is inside
`stop.wait()` holding the event's lock (the hang `make run` showed about one run in several)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.deploy.support import REPO
from tests.support.cluster import STATE_DEADLINE

HOLDING_THE_LOCK = textwrap.dedent(
    """
    import os, signal, threading, time
    from common.stop_signals import stop_on_signals
    stop = threading.Event()
    stop_on_signals(stop, second_exits_after={second})
    with stop._cond:  # where Event.wait is when a signal lands at the wrong moment
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the Python handler runs here, at a bytecode boundary
            pass
    print("handler returned", flush=True)
    print("stopped" if stop.wait(5) else "not stopped", flush=True)
    {after}
    """
)


def run(second: float | None, after: str = "") -> subprocess.CompletedProcess:
    script = HOLDING_THE_LOCK.format(second=second, after=after)
    return subprocess.run(
        # A hang guard: a Python start with its imports can take over 30 s at load.
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=STATE_DEADLINE
    )


def test_a_signal_landing_while_the_event_lock_is_held_still_stops_the_process():
    done = run(None)
    assert done.stdout.split("\n")[:2] == ["handler returned", "stopped"], done.stderr


def test_a_second_signal_well_after_the_first_exits_at_once():
    done = run(0.2, after="time.sleep(0.5); os.kill(os.getpid(), signal.SIGTERM); time.sleep(5); print('still here')")
    assert done.returncode == 143 and "still here" not in done.stdout, (done.stdout, done.stderr)


def test_the_same_signal_delivered_twice_at_once_is_one_request():
    done = run(5.0, after="os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.3); print('still here', flush=True)")
    assert "still here" in done.stdout and done.returncode == 0, (done.stdout, done.stderr)
