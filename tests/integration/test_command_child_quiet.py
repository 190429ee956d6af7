"""A command process whose module no longer listens ends quietly: no raw traceback on stderr (a
module's log is one JSON event a line) and exit code 0. Real processes from a real forkserver."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.cluster import REPO, STATE_DEADLINE

ANSWER_TO_NOBODY = """
import os, socket
import multiprocessing
from common.runtime.child import child_main
from tests.integration.test_command_refill import request

if __name__ == "__main__":
    context = multiprocessing.get_context("forkserver")
    parent, child = context.Pipe()
    process = context.Process(target=child_main, args=("tests.support.counted_commands:counted", child, False, "json"))
    process.start()
    child.close()
    parent.recv()  # ready
    # The module stops listening (its end shut for reading, as a dead reader's is): the answer to
    # the command below has nowhere to go.
    socket.socket(fileno=os.dup(parent.fileno())).shutdown(socket.SHUT_RD)
    parent.send(request({}).__dict__)
    process.join(60)
    print("exit code", process.exitcode)
"""


def test_a_command_process_whose_answer_has_nowhere_to_go_ends_quietly():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", ANSWER_TO_NOBODY], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=STATE_DEADLINE)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "exit code 0" in run.stdout, run.stdout + run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "BrokenPipeError" not in run.stderr, run.stderr[-3000:]
