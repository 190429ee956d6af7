"""Unknown outcomes verified under kill -9 (docs/design/runtime.md, "Verifying an unknown outcome"):
many `init_instance` tasks on the real mysql module and MariaDB while the module is killed in the
middle of commands (a crash `during_command` or `before_commit` of a chosen task takes every command
in flight down with it), restarted at once by a supervisor; beside them, tasks whose verify never
can tell.

Counted in MariaDB afterwards: each task that succeeded owns exactly one database and one
ownership row, each rolled-back one none (0 duplicate side effects); each task whose outcome stayed
unknown ended ROLLBACK_FAILED with exactly one alarm. The verdicts are printed.
"""

from __future__ import annotations

import collections
import random
import threading
import time

import pytest

from common.engine.states import TaskStatus
from tests.chaos.plans import SCENARIO_TIMEOUT, scale
from tests.support.cluster import Cluster, wait_until
from tests.support.mariadb import mariadb_sandbox

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(SCENARIO_TIMEOUT)]
FLOWS = """
version: 1
defaults:
  timeout: 30
  retry: 4
  backoff: {initial: 0.2, max: 1, multiplier: 2, jitter: 0.5}
task_types:
  make_db:
    parameters:
      name: {type: string, required: true}
    steps:
      - name: init_instance
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
  unsure_one:
    steps:
      - name: make
        normal:   {module: unsure, command: make, timeout: 1}
        rollback: {module: unsure, command: unmake}
"""


class Supervisor(threading.Thread):
    """Restarts a killed module at once, as a process supervisor would; counts the restarts."""

    def __init__(self, cluster: Cluster, names: tuple[str, ...]):
        super().__init__(daemon=True)
        self.cluster, self.names, self.stop, self.restarts = cluster, names, threading.Event(), 0

    def run(self) -> None:
        while not self.stop.wait(0.2):
            for name in self.names:
                if self.cluster.procs[name].popen.poll() is not None:
                    self.cluster.restart(name)
                    self.restarts += 1


def test_modules_killed_mid_command_leave_no_duplicate_and_one_alarm_per_unknown(rabbitmq_url, tmp_path):
    # Reduced: 8 tasks, of which (seed 27) four crash the module, both kinds of point among them.
    tasks, unsure = scale(8, 60), scale(2, 6)
    rng = random.Random(27)
    with mariadb_sandbox() as sandbox:
        cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, extra_env={**sandbox.env(), "BATON_PROCESS_SLOTS": "4"})
        supervisor = Supervisor(cluster, ("mysql",))
        try:
            with cluster.starting():
                cluster.start_module("mysql")
                cluster.start_module("unsure", registry="tests.support.verify_commands:unsure")
                cluster.start_module("monitor")
                cluster.start_sweeper()
            supervisor.start()
            names, ids = {}, []
            for i in range(tasks):
                point = rng.choice(["during_command", "before_commit", None, None])
                faults = [{"command": "init_instance", "action": "crash", "at": point}] if point else []
                task = cluster.submit("make_db", name=sandbox.name(f"c{i}"), _baton_faults=faults)
                names[task.TaskId] = sandbox.name(f"c{i}")
                ids.append(task.TaskId)
                time.sleep(rng.uniform(0.1, 0.6))
            hang = [{"command": "make", "action": "hang", "times": 1}]
            doubtful = [cluster.submit("unsure_one", _baton_faults=hang).TaskId for _ in range(unsure)]
            finals = {task_id: cluster.wait_final(task_id, timeout=scale(240, 900)) for task_id in ids + doubtful}

            def alarms() -> collections.Counter:
                return collections.Counter(a.TaskId for a in cluster.store.list_alarms(limit=1000)
                                           if a.TaskId in doubtful)

            wait_until(lambda: len(alarms()) == unsure, 30, "an alarm for each unknown")
            time.sleep(1.0)  # a second alarm, were there one, would be stored by now
            raised = alarms()
        finally:
            supervisor.stop.set()
            supervisor.join(timeout=130)
            cluster.stop_all()

        succeeded = {names[t] for t in ids if finals[t].TaskStatus is TaskStatus.SUCCESS}
        assert {finals[t].TaskStatus for t in ids} <= {TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK}
        assert sandbox.databases() == succeeded and sandbox.owned() == succeeded  # 0 duplicates, 0 debris
        assert len({u for u, _ in sandbox.users()}) == len(succeeded)
        for task_id in doubtful:
            assert finals[task_id].TaskStatus is TaskStatus.ROLLBACK_FAILED
        assert all(count == 1 for count in raised.values()), raised

        verdicts = collections.Counter(e.Message.split(":")[0] for t in ids for e in finals[t].History
                                       if e.Event == "verified")
        print(f"\nverify chaos: {tasks} tasks, {supervisor.restarts} kills of mysql, "
              f"{len(succeeded)} succeeded, verdicts {dict(verdicts)}, {sum(raised.values())} alarms for {unsure} unknowns")
        assert supervisor.restarts >= 1 and sum(verdicts.values()) >= 1
