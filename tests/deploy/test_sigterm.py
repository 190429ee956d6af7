"""SIGTERM to a module container's process (deploy/entrypoint.sh, as `docker stop` or the kubelet
sends it) in the middle of a step: the process stops within its grace period, the step it had to
stop is given back and runs at once on the other replica, and the task still ends as it should."""

from __future__ import annotations

import os
import signal
import time

import pytest

from common.engine.states import TaskStatus
from tests.deploy.support import BIN, ENTRYPOINT
from tests.support.cluster import STATE_DEADLINE, Cluster, wait_until

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

GRACE = 1.0
FLOWS = """
version: 1
task_types:
  slow:
    steps:
      - name: slow_step
        normal:   {module: mysql, command: noop, timeout: 4, retry: 1,
                   backoff: {initial: 0.1, max: 0.1, multiplier: 1, jitter: 0}}
        rollback: {module: mysql, command: noop_rollback}
"""


def test_sigterm_during_a_step_stops_in_time_and_the_task_still_ends(rabbitmq_url, tmp_path):
    # A lease far longer than the test: if the step runs again soon, it was given back, not lapsed.
    cluster = Cluster(
        tmp_path,
        rabbitmq_url,
        FLOWS,
        extra_env={
            "BATON_SHUTDOWN_GRACE_SECONDS": str(GRACE),
            "BATON_LEASE_SECONDS": "60",
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # the entry point's python
        },
    )
    try:
        with cluster.starting():  # side by side
            started = {
                name: cluster.start_process(name, [str(ENTRYPOINT), "module", "mysql"], {}, ready="module started")
                for name in ("mysql-a", "mysql-b")
            }
        replicas = {name: proc.popen for name, proc in started.items()}
        # the command hangs until its timeout on its first attempt
        task = cluster.submit(
            "slow", _baton_faults=[{"command": "noop", "action": "hang", "times": 1}]
        )
        wait_until(lambda: _claims(cluster, task.TaskId), 20, "the step claimed")
        owner = _claims(cluster, task.TaskId)[0].Actor
        pid = int(owner.split(":")[1])  # module@host:pid:suffix; the entry point exec'd: same pid
        name = next(n for n, p in replicas.items() if p.pid == pid)
        time.sleep(0.5)  # well into the command

        sent = time.monotonic()
        replicas[name].send_signal(signal.SIGTERM)
        # Stopped by the grace period (exit 1 and its log lines below), not by the command's 4 s
        # timeout: how many seconds that takes is the machine's load, printed, not asserted.
        code = replicas[name].wait(timeout=STATE_DEADLINE)
        print(f"{name} stopped {time.monotonic() - sent:.2f}s after SIGTERM")
        assert code == 1, "exit 1: a running step had to be stopped (0 when every step finished)"

        final = cluster.wait_final(task.TaskId, timeout=STATE_DEADLINE)
    finally:
        cluster.stop_all()
    assert final.TaskStatus is TaskStatus.SUCCESS, final.TaskMessage
    events = [(e.Event, e.Actor, e.Time) for e in final.History]
    released = next(e for e in events if e[0] == "released")
    assert released[1] == owner
    # claimed again by the other replica because it was given back: a lapsed lease would show
    # as the sweeper's failed attempt ("lease of ... lapsed") before the next claim
    again = next(e for e in events if e[0] == "claimed" and e[2] >= released[2])
    assert again[1] != owner, events
    assert not [e for e in final.History if "lapsed" in e.Message], events
    log = cluster.procs[name].log_text()
    assert (
        "grace period over; stopping running commands" in log
        and "step released for another replica" in log
    )


def _claims(cluster: Cluster, task_id: str) -> list:
    task = cluster.store.get(task_id)
    return [e for e in task.History if e.Event == "claimed"] if task else []
