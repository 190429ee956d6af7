"""A step whose step before it ran in the same module process is claimed on the task as that
process wrote it, without reading the document; a write by anybody else in between makes the
claim read as before (common/runtime/last_written.py)."""

from __future__ import annotations

import threading

import pytest

from common.broker.inprocess import InProcessBroker
from common.engine.states import FINAL_STATUSES, RunState, TaskStatus
from common.flows import parse_flows
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.store.sqlite.tasks import SqliteStore
from oss.services.tasks import TaskService
from tests.support.cluster import wait_until

FLOWS = """
version: 1
task_types:
  two:
    steps:
      - name: first
        normal: {module: mysql, command: noop, timeout: 30, retry: 0}
      - name: second
        normal: {module: mysql, command: noop, timeout: 30, retry: 0}
"""


class Counting:
    """The real store; counts the reads of each task, and runs `after_write` after each
    compare-and-set that wrote (the test's other writer)."""

    def __init__(self, store):
        self._store = store
        self.reads: dict[str, int] = {}
        self.after_write = None
        self._lock = threading.Lock()

    def get(self, task_id):
        with self._lock:
            self.reads[task_id] = self.reads.get(task_id, 0) + 1
        return self._store.get(task_id)

    def compare_and_set(self, task, expected_version):
        written = self._store.compare_and_set(task, expected_version)
        if written and self.after_write is not None:
            self.after_write(task)
        return written

    def __getattr__(self, name):
        return getattr(self._store, name)


@pytest.fixture
def parts(tmp_path):
    store = SqliteStore(str(tmp_path / "baton.db"))
    broker = InProcessBroker()
    settings = load_settings(concurrency=1, lease_seconds=30)
    service = TaskService(store, broker, parse_flows(FLOWS, "flows.yaml"), settings)
    broker.declare(module_queue("mysql"))
    counting = Counting(store)
    runtime = ModuleRuntime(registry_ref="modules.mysql.commands:registry", settings=settings, store=counting,
                            broker=broker)  # fmt: skip
    yield store, counting, service, runtime
    runtime.stop(grace=1)
    service.close()
    broker.close()
    store.close()


def _run(store, service, runtime):
    runtime.start()
    task = service.submit("two", {}).task
    wait_until(lambda: store.get(task.TaskId).TaskStatus in FINAL_STATUSES, 15, "the task final")
    return store.get(task.TaskId)


def _claims(task, cursor):
    return [e for e in task.History if e.Event == "claimed" and e.Cursor == cursor]


def test_the_next_step_in_the_same_module_is_claimed_without_reading_the_task(parts):
    store, counting, service, runtime = parts
    done = _run(store, service, runtime)
    assert done.TaskStatus is TaskStatus.SUCCESS
    assert len(_claims(done, 0)) == 1 and len(_claims(done, 1)) == 1
    # The first step's claim reads the task OSS created; the second claims the task as the
    # commit of the first wrote it. (Before: a read per claim, 2.)
    assert counting.reads[done.TaskId] == 1


def test_a_write_by_another_writer_before_the_claim_makes_it_read_and_claim_once(parts):
    store, counting, service, runtime = parts
    bumped = []

    def another_writer(task):
        # Right after the first step's commit (its run done, the second's pending): another
        # process writes the task (a lease renewal, an operator), so the version moves on.
        runs = {r.Cursor: r.State for r in task.Runs}
        if not bumped and runs.get(1) is RunState.PENDING:
            fresh = store.get(task.TaskId)
            fresh.Version += 1
            assert store.compare_and_set(fresh, fresh.Version - 1)
            bumped.append(fresh.Version)

    counting.after_write = another_writer
    done = _run(store, service, runtime)
    assert bumped, "the other writer never wrote"
    assert done.TaskStatus is TaskStatus.SUCCESS
    assert len(_claims(done, 0)) == 1 and len(_claims(done, 1)) == 1
    # The claim on the kept task matched nothing and read the task again.
    assert counting.reads[done.TaskId] == 2
