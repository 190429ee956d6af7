"""A module killed with SIGKILL takes its command processes with it.

A `process` command runs in a child of the module's forkserver (common/runtime/runner.py). When the
module dies in the middle of a command, the step is handed to another replica once its lease runs
out: a command process still running then would make its side effects after that hand-over. So
the command process and every program the command started must be gone within a second of the
kill (measured: well under a tenth), the module's forkserver and resource tracker must end too
(waited for), and the command's side effect must never happen.
"""

from __future__ import annotations

import time

import pytest

from tests.support.cluster import wait_until
from tests.support.ledger_cluster import REGISTRY, ledger_cluster
from tests.support.ledger_file import read_ledger
from tests.support.process_tree import alive, descendants

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
STATE_DEADLINE = 120  # for states reached on a loaded machine (a start, a claim), not a measure
OUTLIVED_AT_MOST = 1.0  # seconds a command process may outlive its killed module

FLOWS = """
version: 1
defaults: {timeout: 300, retry: 0}
task_types:
  slow:
    parameters:
      work_seconds: {type: number, default: 0}
    steps:
      - name: linger
        normal: {module: ledger, command: linger}
"""


@pytest.fixture
def cluster(rabbitmq_url, tmp_path):
    with ledger_cluster(tmp_path, rabbitmq_url, FLOWS) as cluster:
        yield cluster


def _role(pid: int, command: int, helper: int) -> str:
    return "command" if pid == command else "its program" if pid == helper else str(pid)


def test_no_command_process_outlives_its_module_killed_with_sigkill(cluster):
    module = cluster.start_module("ledger", registry=REGISTRY)
    task_id = cluster.submit("slow", work_seconds=600).TaskId

    def begun() -> list[dict]:
        return [n for n in read_ledger(cluster.ledger) if n["task"] == task_id and n["op"] == "begun"]

    wait_until(begun, STATE_DEADLINE, "the command running in its command process")
    command, helper = begun()[0]["pid"], begun()[0]["helper"]
    below = descendants(module.popen.pid)  # the forkserver, the command processes, their programs
    assert {command, helper} <= set(below)

    module.popen.kill()
    killed = time.monotonic()
    gone: dict[int, float] = {}

    def all_gone() -> bool:
        gone.update({pid: time.monotonic() - killed for pid in below if pid not in gone and not alive(pid)})
        return len(gone) == len(below)

    wait_until(all_gone, STATE_DEADLINE, "every process below the module gone", interval=0.01)
    module.popen.wait()
    print(f"after the kill, gone in seconds: {({_role(pid, command, helper): round(t, 3) for pid, t in gone.items()})}")

    # The command and the program it started: what could still make a side effect.
    outlived = max(gone[command], gone[helper])
    assert outlived <= OUTLIVED_AT_MOST, f"the command process outlived its module by {outlived:.2f}s"
    # All of them are gone: whatever the ledger shows now is final.
    assert not [n for n in read_ledger(cluster.ledger) if n["task"] == task_id and n["op"] == "apply"]
    assert not list(cluster.effects.iterdir())
