"""A claim's lease, and each renewal's, runs from the moment it is written, not from before the
write waited for its turn on the task (common/store/tasks/turns.py): on a busy task (a for_each
step's items claimed and committed by several threads of one process) a claim or a renewal may
wait seconds for its turn. Stamped before that wait, the lease the store held was seconds short,
and the sweeper took a healthy step's worker for lost (WORKER_LOST: a `retry: 0` step failed and
its task rolled back). Real SQLite store, real module runtime, a real command process."""

from __future__ import annotations

import threading
import time

import pytest

from common.broker.inprocess import InProcessBroker
from common.engine.states import FINAL_STATUSES, RunState, TaskStatus
from common.flows import parse_flows
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.store.sqlite.tasks import SqliteStore
from common.store.tasks import turns
from common.store.tasks.turns import task_turn
from oss.services.tasks import TaskService
from tests.support.cluster import STATE_DEADLINE, wait_until

FLOWS = """
version: 1
task_types:
  napping:
    steps:
      - name: nap
        normal: {module: mysql, command: nap, timeout: 120, retry: 0}
"""
HOLD = 2.0  # how long the test's own turn on the task makes the claim or the renewal wait


class Writes:
    """The real store; notes each write that landed: when, and the task's run deadlines."""

    def __init__(self, store: SqliteStore):
        self._store = store
        self.landed: list[tuple[float, list[tuple[RunState, float | None]]]] = []
        self._lock = threading.Lock()

    def compare_and_set(self, task, expected_version):
        written = self._store.compare_and_set(task, expected_version)
        if written:
            with self._lock:
                self.landed.append((time.time(), [(r.State, r.Deadline) for r in task.Runs]))
        return written

    def running_deadlines_after(self, moment: float) -> list[float]:
        with self._lock:
            return [d for at, runs in self.landed if at >= moment for state, d in runs if state is RunState.RUNNING]

    def __getattr__(self, name):
        return getattr(self._store, name)


def make_parts(tmp_path, lease: float):
    store = SqliteStore(str(tmp_path / "baton.db"))
    broker = InProcessBroker()
    settings = load_settings(concurrency=1, lease_seconds=lease)
    service = TaskService(store, broker, parse_flows(FLOWS, "flows.yaml"), settings)
    broker.declare(module_queue("mysql"))
    writes = Writes(store)
    runtime = ModuleRuntime(registry_ref="tests.support.standin_commands:mysql", settings=settings, store=writes,
                            broker=broker)  # fmt: skip
    return store, broker, service, writes, runtime


@pytest.fixture
def parts(request, tmp_path):
    store, broker, service, writes, runtime = make_parts(tmp_path, request.param)
    yield store, service, writes, runtime
    runtime.stop(grace=1)
    service.close()
    broker.close()
    store.close()


def turn_waited_for(task_id: str) -> bool:
    """Another thread of this process waits for the turn the test holds (the table counts the
    threads on a task's lock: the holder and each waiter)."""
    entry = turns._locks.get(task_id)  # noqa: SLF001
    return entry is not None and entry[1] >= 2


def hold_turn_while_waited_for(task_id: str) -> float:
    """Take the task's turn, wait for the module's write to queue behind it, keep it HOLD more
    seconds; the moment it was given back."""
    turn = task_turn(task_id)
    turn.__enter__()
    try:
        wait_until(lambda: turn_waited_for(task_id), STATE_DEADLINE, "the module's write waiting for its turn")
        time.sleep(HOLD)
        released = time.time()
    finally:
        turn.__exit__(None, None, None)
    return released


def finish(store, gate, task_id: str):
    gate.touch()
    wait_until(lambda: store.get(task_id).TaskStatus in FINAL_STATUSES, 30, "the task final")
    return store.get(task_id)


@pytest.mark.parametrize("parts", [30.0], indirect=True)
def test_a_claim_that_waited_for_its_turn_holds_its_lease_from_its_write(parts, tmp_path):
    store, service, writes, runtime = parts
    gate = tmp_path / "gate"
    task_id = service.submit("napping", {"nap_gate": str(gate), "nap_seconds": 0}).task.TaskId
    turn = task_turn(task_id)
    turn.__enter__()  # before the module starts: its claim is the write that waits
    try:
        runtime.start()
        wait_until(lambda: turn_waited_for(task_id), STATE_DEADLINE, "the claim waiting for its turn")
        time.sleep(HOLD)
        released = time.time()
    finally:
        turn.__exit__(None, None, None)
    wait_until(lambda: writes.running_deadlines_after(released), STATE_DEADLINE, "the claim written")
    claimed = writes.running_deadlines_after(released)[0]
    # The whole lease from the write (before: from before the wait, HOLD seconds short).
    assert claimed >= released + 30.0
    assert finish(store, gate, task_id).TaskStatus is TaskStatus.SUCCESS


@pytest.mark.parametrize("parts", [3.0], indirect=True)
def test_a_renewal_that_waited_for_its_turn_holds_the_lease_from_its_write(parts, tmp_path):
    store, service, writes, runtime = parts
    gate = tmp_path / "gate"
    runtime.start()
    task_id = service.submit("napping", {"nap_gate": str(gate), "nap_seconds": 0}).task.TaskId
    wait_until(lambda: any(r.State is RunState.RUNNING for r in store.get(task_id).Runs), STATE_DEADLINE,
               "the step running")  # fmt: skip
    # The command runs until the gate opens; its renewals (every second) are the only writes.
    released = hold_turn_while_waited_for(task_id)
    wait_until(lambda: writes.running_deadlines_after(released), STATE_DEADLINE, "the renewal written")
    renewed = writes.running_deadlines_after(released)[0]
    assert renewed >= released + 3.0
    assert finish(store, gate, task_id).TaskStatus is TaskStatus.SUCCESS
