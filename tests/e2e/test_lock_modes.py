"""Lock modes end to end: a real module process (4 slots) and sweeper on RabbitMQ, six tasks on
one instance key submitted at once: two backups, two resizes, a delete, then a backup.

What must hold, read from the tasks' step times: the backups and the first resize run at the same
time; the two resizes never overlap; the delete overlaps nobody; and the last backup, which could
share the key with what ran when it was submitted, starts only after the delete ended (nobody
overtakes a waiter). Afterwards no lock is held or waited for. Runs in about 10 seconds.
"""

from __future__ import annotations

import pytest

from common.engine.document import Task
from common.engine.states import TaskStatus
from common.store.gates.lock.table import open_lock_store
from common.store.gates.lock.table import LockTable
from tests.support.cluster import Cluster, wait_until
from tests.support.test_store import cluster_mongo_url

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
HOLD = 1.0
FLOWS = """
version: 1
defaults: {timeout: 10, retry: 0}
lock_modes:
  backup: {backup: true,  resize: true,  delete: false}
  resize: {backup: true,  resize: false, delete: false}
  delete: {backup: false, resize: false, delete: false}
task_types:
""" + "".join(f"""
  {mode}_instance:
    lock: {{key: "instance:{{instance}}", mode: {mode}, limit: 10}}
    parameters:
      instance: {{type: string, required: true}}
      hold: {{type: number, default: {HOLD}}}
    steps:
      - name: work
        normal: {{module: resource, command: hold}}
""" for mode in ("backup", "resize", "delete"))


def span(task: Task) -> tuple[float, float]:
    (step,) = task.Steps
    assert step.TimeStart is not None and step.TimeEnd is not None
    return step.TimeStart, step.TimeEnd


def overlap(a: Task, b: Task) -> bool:
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def test_modes_share_the_key_as_declared_and_nobody_overtakes_a_waiter(rabbitmq_url, tmp_path, request):
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS, mongo_url=cluster_mongo_url(request))
    locks = LockTable(open_lock_store(cluster.store_url))
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource", registry="tests.support.standin_commands:resource")
            cluster.start_sweeper("sweeper")
        order = ["backup", "backup", "resize", "resize", "delete", "backup"]
        ids = [cluster.submit(f"{mode}_instance", instance="db1").TaskId for mode in order]
        b1, b2, r1, r2, d, b3 = tasks = [cluster.wait_final(task_id, timeout=60) for task_id in ids]
        assert [t.TaskStatus for t in tasks] == [TaskStatus.SUCCESS] * 6, [t.TaskMessage for t in tasks]
        assert overlap(b1, b2) and overlap(b1, r1) and overlap(b2, r1), [span(t) for t in tasks]
        assert not overlap(r1, r2)
        assert not any(overlap(d, other) for other in tasks if other is not d)
        assert span(b3)[0] >= span(d)[1], "the last backup overtook the waiting delete"
        assert [t.Lock.Mode for t in tasks] == order
        wait_until(lambda: locks.list_locks() == [], 15, "no lock held or waited for")
    except AssertionError:
        print(cluster.logs())
        raise
    finally:
        locks.close()
        cluster.stop_all()
