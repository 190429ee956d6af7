"""A command child killed at its timeout is replaced at once, off the step's path: the next
command finds a warm child instead of waiting for a new one's imports inside its own attempt
(on a loaded machine that wait pushed a retry past its own timeout). Real child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from common.runtime.runner import CommandRequest, CommandRunner
from common.engine.states import ResultCode
from tests.support.cluster import REPO, STATE_DEADLINE, wait_until


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
        assert runner.run(request({}), STATE_DEADLINE, threading.Event()).code is ResultCode.OK
        assert _warm_children(runner) == 1
        print(f"next command after a timeout: {time.monotonic() - started:.3f}s")
    finally:
        runner.close()


def test_new_children_do_not_import_the_module_again(tmp_path):
    """Children are forked from a process that imported the registry once: a replacement is ready
    in milliseconds. Spawned ones imported everything again (0.6-1.2 s here), and a retry right
    after a timeout waited for that inside its attempt (the chaos suite's hung-command bound).
    In a process of its own: the forkserver is one per process, started by the first runner."""
    imports = tmp_path / "imports"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BATON_TEST_IMPORT_LOG": str(imports)}
    run = subprocess.run([sys.executable, "-c", KILL_THREE_CHILDREN], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=STATE_DEADLINE)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    # This process never imported it; five children ran commands: one import, in the forkserver.
    assert len(imports.read_text().split()) == 1


KILL_THREE_CHILDREN = """
import threading
from common.runtime.runner import CommandRunner
from common.engine.states import ResultCode
from tests.integration.test_command_refill import request

if __name__ == "__main__":
    runner = CommandRunner("tests.support.counted_commands:counted", size=2, fault_injection=True)
    runner.start()
    hang = {"_baton_faults": [{"command": "noop", "action": "hang"}]}
    for _ in range(3):  # three children killed at their timeout, three replacements
        assert runner.run(request(hang), 0.3, threading.Event()).code is ResultCode.TIMED_OUT
        assert runner.run(request({}), 30, threading.Event()).code is ResultCode.OK
    runner.close()
"""


def _warm_children(runner: CommandRunner) -> int:
    """Children waiting in the idle queue, alive (peeked without taking them for good)."""
    waiting = []
    while not runner._idle.empty():
        waiting.append(runner._idle.get())
    for child in waiting:
        runner._idle.put(child)
    return sum(1 for c in waiting if c is not None and c.process.is_alive())
