"""The in-process kinds of command (docs/design/runtime.md) through a real module process on the
real RabbitMQ and a SQLite store: async commands on the module's event loop, thread commands in
threads of its own, no command process at all. What a command saw is read from its marks
(tests/support/kind_commands.py) and from the store; never from how fast anything went."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from common.engine.states import TaskStatus
from tests.support.cluster import REPO, STATE_DEADLINE, Cluster, wait_until

pytestmark = [pytest.mark.rabbitmq]
SECRET = "Kinds-S3cret-Passw0rd"
FLOWS = """
version: 1
defaults: {timeout: 300, retry: 0}
task_types:
  async_one:
    parameters:
      seconds: {type: number, default: 0.1}
      marks: {type: string, default: ""}
      gate: {type: string, default: ""}
    steps:
      - name: wait
        normal: {module: kinds, command: wait}
  thread_one:
    parameters:
      seconds: {type: number, default: 0.1}
      marks: {type: string, default: ""}
    steps:
      - name: block
        normal: {module: kinds, command: block}
  async_timeout:
    parameters:
      seconds: {type: number}
      slow_attempt: {type: integer}
      marks: {type: string}
    steps:
      - name: wait
        normal: {module: kinds, command: wait, timeout: 1, retry: 1,
                 backoff: {initial: 0.1, max: 0.1, multiplier: 1, jitter: 0}}
  offloaded:
    parameters:
      marks: {type: string}
      gate: {type: string}
    steps:
      - name: offload
        normal: {module: kinds, command: offload}
  fenced:
    parameters:
      marks: {type: string}
    steps:
      - name: write
        normal:   {module: kinds, command: fenced_write}
        rollback: {module: kinds, command: undo}
  polled:
    steps:
      - name: poll
        normal: {module: kinds, command: poll}
  secretive:
    parameters:
      password: {type: string, secret: true}
    steps:
      - name: async_logs
        normal: {module: kinds, command: tell_secret}
      - name: thread_logs
        normal: {module: kinds, command: tell_secret_in_thread}
  held:
    parameters:
      gate: {type: string}
      marks: {type: string}
    steps:
      - name: hold
        normal: {module: mixed, command: hold}
  quick:
    steps:
      - name: quick
        normal: {module: mixed, command: quick}
  hung_handoff:
    steps:
      - name: hang
        normal: {module: kinds, command: hang_handoff, timeout: 1}
  hung:
    steps:
      - name: hang
        normal: {module: kinds, command: hang, timeout: 1}
"""


@pytest.fixture(scope="module")
def cluster(rabbitmq_url, tmp_path_factory):
    """One `kinds` module process (every command async or thread) and a sweeper. A 10 s lease:
    hundreds of leases in flight are renewed every 3.3 s on a shared, loaded machine. A 2 s
    shutdown grace: the commands a SIGTERM here finds wait on a gate or hang, so the grace always
    runs out (that is the case under test), and a longer one is only waited out."""
    cluster = Cluster(tmp_path_factory.mktemp("kinds"), rabbitmq_url, FLOWS,
                      extra_env={"BATON_LEASE_SECONDS": "10", "BATON_SHUTDOWN_GRACE_SECONDS": "2"})
    try:
        with cluster.starting():  # side by side
            cluster.start_module("kinds", registry="tests.support.kind_commands:kinds")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture
def marks(tmp_path) -> Path:
    return tmp_path


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(p) for p in (task / "children").read_text().split()]
    return found


def history(task, event: str) -> list:
    return [e for e in task.History if e.Event == event]


def test_an_async_and_a_thread_command_run_in_the_module_process_with_no_command_process(cluster):
    async_task = cluster.submit("async_one")
    thread_task = cluster.submit("thread_one")
    done_async, done_thread = cluster.wait_final(async_task.TaskId), cluster.wait_final(thread_task.TaskId)
    assert done_async.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    assert done_thread.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    assert done_async.Parameters["thread"] == "baton-event-loop"
    assert done_thread.Parameters["thread"] == "baton-thread-block"
    # Every command of this module runs in-process: no forkserver, no command children.
    assert children(cluster.procs["kinds"].popen.pid) == []
    shown = subprocess.run([sys.executable, "-m", "oss", "modules"], env=cluster.env, cwd=REPO,
                           capture_output=True, text=True, timeout=STATE_DEADLINE)
    assert shown.returncode == 0, shown.stderr
    assert "block (thread)" in shown.stdout and "wait (async)" in shown.stdout, shown.stdout


def test_a_lost_lease_ends_a_thread_attempt_at_once_and_abandons_its_thread(cluster, marks):
    task = cluster.submit("thread_one", seconds=60, marks=str(marks))
    wait_until(lambda: (marks / f"{task.TaskId}-1.started").exists(), 60, "the command started")
    cluster.service.actions.apply("cancel", task.TaskId, "olga", "not needed", stop_running=True)

    def discarded() -> bool:
        return any(e.get("event") == "claim lost while running; outcome discarded" and e.get("task_id") == task.TaskId
                   for e in cluster.log_events("kinds"))

    # The attempt is over while its thread still sleeps out its minute.
    wait_until(discarded, 60, "the attempt marked lost")
    assert cluster.wait_final(task.TaskId).TaskStatus is TaskStatus.ROLLED_BACK


def test_an_async_timeout_cancels_the_coroutine_counts_a_failed_attempt_and_retries(cluster, marks):
    task = cluster.submit("async_timeout", seconds=3600, slow_attempt=1, marks=str(marks))
    done = cluster.wait_final(task.TaskId)
    assert done.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    assert (marks / f"{task.TaskId}-1.cancelled").exists()  # the coroutine saw CancelledError
    failed = history(done, "attempt_failed")
    assert [(e.Attempt, e.Message) for e in failed] == [(1, "timed out after 1s; stopped")]
    assert done.Parameters["attempt"] == 2


def test_a_lost_lease_cancels_an_async_command(cluster, marks):
    task = cluster.submit("async_one", seconds=3600, marks=str(marks))
    wait_until(lambda: (marks / f"{task.TaskId}-1.started").exists(), 60, "the command started")
    # An operator stops the running step: its run is gone, so the next renewal is refused.
    cluster.service.actions.apply("cancel", task.TaskId, "olga", "not needed", stop_running=True)
    wait_until(lambda: (marks / f"{task.TaskId}-1.cancelled").exists(), 60, "the coroutine cancelled")
    assert cluster.wait_final(task.TaskId).TaskStatus is TaskStatus.ROLLED_BACK
    assert any(e.get("event") == "lease lost" and e.get("task_id") == task.TaskId
               for e in cluster.log_events("kinds"))


def test_the_fence_refuses_a_stale_async_attempt(cluster, marks):
    task = cluster.submit("fenced", marks=str(marks))
    wait_until(lambda: (marks / f"{task.TaskId}-1.started").exists(), 60, "the command started")
    cluster.service.actions.apply("cancel", task.TaskId, "olga", "stale it", stop_running=True)
    wait_until(lambda: (marks / f"{task.TaskId}-1.refused").exists(), 60, "the fence refused")
    assert not (marks / f"{task.TaskId}-1.wrote").exists()
    assert cluster.wait_final(task.TaskId).TaskStatus is TaskStatus.ROLLED_BACK


def test_an_async_command_checks_again_later(cluster):
    done = cluster.wait_final(cluster.submit("polled").TaskId)
    assert done.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    assert len(history(done, "check_again")) == 3 and done.Parameters["polled"] == 3


def test_secrets_are_masked_in_the_log_lines_of_async_and_thread_commands(cluster):
    done = cluster.wait_final(cluster.submit("secretive", password=SECRET).TaskId)
    assert done.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    assert SECRET not in cluster.procs["kinds"].log_text()
    lines = [e for e in cluster.log_events("kinds") if e.get("task_id") == done.TaskId]
    for kind in ("async", "thread"):
        line = next(e for e in lines if e["event"] == f"{kind} command logging its secret")
        assert line["value"] == "***" and line["note"] == "the password is ***"
        # The log context followed the command into its task or thread.
        assert line["step"] == (0 if kind == "async" else 1) and line["attempt"] == 1
        stdlib = next(e for e in lines if e["event"].startswith("stdlib line") and e["logger"] == f"kinds.{kind}")
        assert stdlib["event"] == "stdlib line with *** inside"


def test_a_full_kind_does_not_hold_up_the_other_kinds_of_its_module(cluster, marks):
    cluster.start_module("mixed", registry="tests.support.kind_commands:mixed", BATON_PROCESS_SLOTS="1")
    gate = marks / "gate"
    held = [cluster.submit("held", gate=str(gate), marks=str(marks)) for _ in range(2)]
    wait_until(lambda: len(list(marks.glob("*.started"))) == 1, 60, "the one process slot taken")
    # The second process command waits for the slot; the async ones go ahead of it meanwhile.
    quick = [cluster.wait_final(cluster.submit("quick").TaskId) for _ in range(3)]
    assert [t.TaskStatus for t in quick] == [TaskStatus.SUCCESS] * 3
    # One process command runs, the other is not even claimed yet: it waits for the slot.
    assert {cluster.store.get(t.TaskId).TaskStatus for t in held} == {TaskStatus.RUNNING, TaskStatus.NOT_STARTED}
    assert len(list(marks.glob("*.started"))) == 1
    gate.write_text("open")
    assert [cluster.wait_final(t.TaskId).TaskStatus for t in held] == [TaskStatus.SUCCESS] * 2


def test_blocking_calls_an_async_command_hands_off_hold_up_no_other_step(cluster, marks):
    """More blocking hand-offs than the module has store threads: they run on a pool of their
    own, so other steps are still claimed and committed meanwhile."""
    gate = marks / "gate"
    blocked = [cluster.submit("offloaded", marks=str(marks), gate=str(gate)) for _ in range(4)]
    wait_until(lambda: len(list(marks.glob("*.started"))) == 4, 60, "4 hand-offs blocking")
    quick = cluster.wait_final(cluster.submit("async_one").TaskId, timeout=60)
    assert quick.TaskStatus is TaskStatus.SUCCESS, cluster.logs()
    gate.write_text("open")
    ended = [cluster.wait_final(t.TaskId, timeout=60) for t in blocked]
    assert [t.TaskStatus for t in ended] == [TaskStatus.SUCCESS] * 4
    assert {t.Parameters["ran_on"].rsplit("_", 1)[0] for t in ended} == {"baton-offload"}


def test_hundreds_of_async_commands_in_flight_at_once_in_one_module_process(cluster, marks):
    count, gate = 220, marks / "gate"
    tasks = [cluster.submit("async_one", seconds=2, marks=str(marks), gate=str(gate)) for _ in range(count)]
    # Every one of them has started, and none can end before the gate opens: all in flight at once.
    wait_until(lambda: len(list(marks.glob("*.started"))) == count, 240, f"{count} commands started")
    assert children(cluster.procs["kinds"].popen.pid) == []
    gate.write_text("open")
    finished = [cluster.wait_final(t.TaskId, timeout=240) for t in tasks]
    failed = [(t.TaskId, t.TaskStatus.name, t.TaskMessage, [e.Event for e in t.History][-6:]) for t in finished
              if t.TaskStatus is not TaskStatus.SUCCESS]  # fmt: skip
    assert failed == [], (len(failed), failed[:3])
    assert not list(marks.glob("*.cancelled"))


def test_sigterm_releases_the_async_commands_in_flight_and_none_is_lost(cluster, marks):
    count, gate = 20, marks / "gate"
    tasks = [cluster.submit("async_one", seconds=0.1, marks=str(marks), gate=str(gate)) for _ in range(count)]
    wait_until(lambda: len(list(marks.glob("*-1.started"))) == count, 120, f"{count} commands started")
    cluster.kill("kinds", signal.SIGTERM)  # they wait for the gate: the grace period runs out
    assert cluster.procs["kinds"].popen.returncode == 1  # not every command finished in time
    assert len(list(marks.glob("*-1.cancelled"))) == count
    gate.write_text("open")
    cluster.restart("kinds")
    finished = [cluster.wait_final(t.TaskId, timeout=120) for t in tasks]
    assert [t.TaskStatus for t in finished] == [TaskStatus.SUCCESS] * count
    for task in finished:  # released, not failed: the same attempt ran again
        assert len(history(task, "released")) == 1 and not history(task, "attempt_failed")
        assert {e.Attempt for e in history(task, "claimed")} == {1}


def test_too_many_stuck_threads_stop_the_module_to_be_restarted(cluster):
    cluster.kill("kinds", signal.SIGTERM)
    stuck = cluster.start_module("kinds", name="kinds-stuck", registry="tests.support.kind_commands:kinds",
                                 BATON_STUCK_THREADS_MAX="0")
    task = cluster.submit("hung")
    done = cluster.wait_final(task.TaskId)  # the attempt failed at its timeout, its thread abandoned
    assert done.TaskStatus is TaskStatus.ROLLED_BACK and "timed out after 1s" in done.TaskMessage, done.TaskMessage
    wait_until(lambda: stuck.popen.poll() is not None, 60, "the module exits")
    assert stuck.popen.returncode == 1
    assert any(e.get("event") == "too many thread commands stuck past their timeout; the module stops to be restarted"
               for e in cluster.log_events("kinds-stuck"))


def test_a_blocking_hand_off_that_never_returns_does_not_keep_the_module_from_exiting(cluster):
    """A hung call an async command handed off holds a thread of the process for good, as a hung
    thread command does: it must not stop the module from exiting on SIGTERM."""
    name = "kinds-handoff"
    module = cluster.start_module("kinds", name=name, registry="tests.support.kind_commands:kinds")
    done = cluster.wait_final(cluster.submit("hung_handoff").TaskId)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK and "timed out after 1s" in done.TaskMessage, done.TaskMessage
    cluster.kill(name, signal.SIGTERM)  # waits up to 30 s for the exit
    assert module.popen.returncode in (0, 1), cluster.logs()
