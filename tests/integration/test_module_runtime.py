"""The module runtime in one process: in-process broker, SQLite store, real command children."""

from __future__ import annotations

import time

import pytest
import structlog

from common.broker.inprocess import InProcessBroker
from common.errors import StoreError, StoreRefused
from common.flows import parse_flows
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.engine.states import FINAL_STATUSES, TaskStatus
from common.store.sqlite.tasks import SqliteStore
from oss.services.tasks import TaskService
from tests.support.cluster import STATE_DEADLINE, wait_until
from tests.support.builders import only_run

FLOWS = """
version: 1
task_types:
  slow:
    steps:
      - name: only
        normal: {module: mysql, command: noop, timeout: 300, retry: 0}
  gated:
    steps:
      - name: only
        normal: {module: mysql, command: nap, timeout: 300, retry: 0}
"""
# No step here ends at its timeout: a loaded machine took longer than a short one to claim a
# step, hand the next delivery back or stop the runtime, and the timeout then ended the step
# before the state the test looks at. A step that must end waits for its gate (a file the
# test creates) or for the runtime's stop.


@pytest.fixture
def parts(tmp_path):
    store = SqliteStore(str(tmp_path / "baton.db"))
    broker = InProcessBroker()
    flows = parse_flows(FLOWS, "flows.yaml")
    settings = load_settings(concurrency=1, hold_limit_seconds=0.5, fault_injection=True, lease_seconds=5)
    service = TaskService(store, broker, flows, settings)
    broker.declare(module_queue("mysql"))
    yield store, broker, service, settings
    service.close()  # its deferred mark-sent checks end before the store closes
    broker.close()
    store.close()


def runtime_for(store, broker, settings):
    # The stand-in mysql commands: noop, and nap (until its gate file exists).
    return ModuleRuntime(registry_ref="tests.support.standin_commands:mysql", settings=settings, store=store,
                         broker=broker)  # fmt: skip


def hanging():
    # A hang ends only with the runtime's stop (the step's timeout is far away).
    return {"_baton_faults": [{"command": "noop", "action": "hang"}]}


def test_deliveries_waiting_past_the_hold_limit_are_given_back_and_consuming_pauses(parts, tmp_path):
    store, broker, service, settings = parts
    gate = tmp_path / "blocker.go"
    runtime = runtime_for(store, broker, settings)
    runtime.start()
    try:
        with structlog.testing.capture_logs() as logs:
            # The one slot stays busy until the test opens the blocker's gate.
            blocker = service.submit("gated", {"nap_gate": str(gate), "nap_seconds": 0}).task
            wait_until(lambda: store.get(blocker.TaskId).Steps[0].Attempts >= 1, 30, "the blocker claimed")
            waiting = service.submit("slow", {}).task
            wait_until(lambda: any(e["event"] == "every slot busy; consuming paused" for e in logs), 10, "pause")
            # Given back, not held: the message is ready in the queue again while the slot is busy.
            assert broker.queue_depth("mysql") == 1
            assert store.get(waiting.TaskId).Steps[0].Attempts == 0
            gate.touch()
            for task in (blocker, waiting):
                wait_until(lambda t=task: store.get(t.TaskId).TaskStatus in FINAL_STATUSES, 15, "final")
        assert store.get(blocker.TaskId).TaskStatus is TaskStatus.SUCCESS
        assert store.get(waiting.TaskId).TaskStatus is TaskStatus.SUCCESS
        assert any(e["event"] == "a slot is free; consuming resumed" for e in logs)
    finally:
        runtime.stop(grace=1)


def test_stop_lets_a_running_step_finish_within_the_grace_period(parts):
    store, broker, service, settings = parts
    runtime = runtime_for(store, broker, settings)
    runtime.start()
    task = service.submit("slow", {}).task
    wait_until(lambda: store.get(task.TaskId).TaskStatus in FINAL_STATUSES, 10, "final")
    started = time.monotonic()
    assert runtime.stop(grace=STATE_DEADLINE) is True
    assert time.monotonic() - started < STATE_DEADLINE  # nothing was running: it did not wait out the grace


def test_stop_past_the_grace_period_stops_the_command_and_releases_the_step(parts):
    store, broker, service, settings = parts
    runtime = runtime_for(store, broker, settings)
    runtime.start()
    task = service.submit("slow", hanging()).task
    wait_until(lambda: store.get(task.TaskId).TaskStatus is TaskStatus.RUNNING, 10, "running")
    assert runtime.stop(grace=0.5) is False
    stored = store.get(task.TaskId)
    # Stopped by the stop, not by the step's timeout it would otherwise have waited for (that
    # fails the attempt): nothing of the attempt failed.
    assert not [e for e in stored.History if e.Event == "attempt_failed"]
    # Not failed, not left to a lease: pending again, same attempt, its message re-published.
    assert stored.TaskStatus is TaskStatus.RUNNING and only_run(stored).State.value == "pending"
    # Published at once; the entry stays until a claim removes it (or the relay re-sends it).
    assert only_run(stored).Attempt == 1 and [e.DispatchId for e in stored.Outbox] == [only_run(stored).DispatchId]
    assert [e.Event for e in stored.History][-2:] == ["released", "dispatched"]
    assert broker.queue_depth("mysql") == 1


class FaultyStore:
    """The real store, with one fault in compare_and_set (subclasses); `faults` counts them."""

    def __init__(self, store):
        self._store = store
        self.faults = 0

    def __getattr__(self, name):
        return getattr(self._store, name)


def run_one_task(parts, faulty: type[FaultyStore]):
    """One "slow" task through a runtime on the faulty store (no sweeper): (final task, faults)."""
    store, broker, service, settings = parts
    wrapped = faulty(store)
    runtime = runtime_for(wrapped, broker, settings)
    runtime.start()
    try:
        task = service.submit("slow", {}).task
        wait_until(lambda: store.get(task.TaskId).TaskStatus in FINAL_STATUSES, 15, "final")
        return store.get(task.TaskId), wrapped.faults
    finally:
        runtime.stop(grace=1)


class ClaimAnswerLost(FaultyStore):
    """The first claim is written but answered with StoreError, as when the connection drops (or
    the store timeout strikes) after the server applied the write."""

    def compare_and_set(self, task, expected_version):
        written = self._store.compare_and_set(task, expected_version)
        if written and self.faults == 0 and any(r.State.value == "running" for r in task.Runs):
            self.faults += 1
            raise StoreError("mongodb: timed out (the claim was applied)")
        return written


def test_a_claim_written_but_answered_with_a_store_error_still_runs_the_step(parts):
    # retry: 0 and no sweeper: before the fix, the delivery was given back, its redelivery found
    # the task "already claimed" by this very worker and was dropped, and the step waited for a
    # lease expiry that no sweeper here would ever act on.
    done, faults = run_one_task(parts, ClaimAnswerLost)
    assert faults == 1
    assert done.TaskStatus is TaskStatus.SUCCESS and done.Steps[0].Attempts == 1


class RefusesSuccess(FaultyStore):
    """The write recording the step's success is refused for good (as MongoDB refuses a document
    grown past 16 MB by the command's output)."""

    def compare_and_set(self, task, expected_version):
        if task.TaskStatus is TaskStatus.SUCCESS:
            self.faults += 1
            raise StoreRefused("mongodb refuses the write: BSON document too large")
        return self._store.compare_and_set(task, expected_version)


def test_an_outcome_the_store_refuses_for_good_fails_the_step_instead_of_retrying(parts):
    # Before: the refusal escaped the handler, nothing was recorded, and the step waited for a
    # lease expiry (then ran again, to the same refusal, forever).
    done, faults = run_one_task(parts, RefusesSuccess)
    assert faults == 1
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    assert "cannot be stored" in done.Steps[0].Message
