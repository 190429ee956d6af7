"""A command child killed at its timeout is replaced at once, off the step's path: the next
command finds a warm child instead of waiting for a new one's imports inside its own attempt
(on a loaded machine that wait pushed a retry past its own timeout). Real child processes."""

from __future__ import annotations

import threading
import time

from common.runtime.runner import CommandRequest, CommandRunner
from common.statuses import ResultCode
from tests.support.cluster import wait_until


def request(parameters: dict) -> CommandRequest:
    return CommandRequest(task_id="t", task_type="t", command="noop", cursor=0, phase=0, attempt=1,
                          idempotency_key="k", run_key="t", parameters=parameters, dispatch_id="d", owner="me")


def test_a_timed_out_child_is_replaced_before_the_next_command_asks(tmp_path):
    runner = CommandRunner("modules.mysql.commands:registry", size=1, fault_injection=True,
                           store_url=f"sqlite:{tmp_path / 'baton.db'}")
    runner.start()
    try:
        hang = {"_baton_faults": [{"command": "noop", "action": "hang"}]}
        assert runner.run(request(hang), 0.5, threading.Event()).code is ResultCode.TIMED_OUT
        # The replacement starts by itself: a live, ready child waits before anyone asks.
        wait_until(lambda: _warm_children(runner) == 1, 60, "a warm replacement")
        started = time.monotonic()
        assert runner.run(request({}), 5, threading.Event()).code is ResultCode.OK
        assert _warm_children(runner) == 1
        print(f"next command after a timeout: {time.monotonic() - started:.3f}s")
    finally:
        runner.close()


def _warm_children(runner: CommandRunner) -> int:
    """Children waiting in the idle queue, alive (peeked without taking them for good)."""
    waiting = []
    while not runner._idle.empty():
        waiting.append(runner._idle.get())
    for child in waiting:
        runner._idle.put(child)
    return sum(1 for c in waiting if c is not None and c.process.is_alive())
