"""Processes that stall rather than die: a module frozen past its lease, a hung command, and two
sweepers at once."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import threading
import time

import pytest

from common.engine.states import Phase, TaskStatus
from common.store.factory import open_store
from common.relay.sweeper import SweepConfig, Sweeper
from tests.chaos.evidence import assert_clean, log_events, sweeper_totals
from tests.chaos.harness import Supervisor, mongo_tasks
from tests.chaos.history_units import CONCLUSIONS
from tests.chaos.plans import SCENARIO_TIMEOUT, crash, scale
from tests.chaos.report import record, slowest
from tests.chaos.test_module_faults import pick_busy_victim
from tests.support.cluster import wait_until
from tests.support.builders import only_run

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(SCENARIO_TIMEOUT)]

HANG_ONCE = {"command": "noop", "action": "hang", "times": 1}
# What the thawed worker logs when the store refuses it, and a short name for the report.
LATE_WRITE_REFUSED = {
    "outcome refused": "outcome refused",
    "claim lost while running; outcome discarded": "outcome discarded",
    "lease lost": "lease lost",
}


def owner_pid(owner: str) -> int:
    return int(owner.split(":")[1])


def owned_by(actor: str | None, pid: int) -> bool:
    """A worker id reads "<module>@<host>:<pid>:<random>"."""
    return bool(actor) and actor.count(":") >= 2 and owner_pid(actor) == pid


def store_write_locked(db_path: str, wait: float = 1.0) -> bool:
    """True if nobody can take SQLite's write lock within `wait` seconds."""
    db = sqlite3.connect(db_path, timeout=wait, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError as exc:
        if "locked" not in str(exc):
            raise
        return True
    finally:
        db.close()


def test_module_frozen_past_its_lease_has_its_late_writes_refused(make_cluster):
    """SIGSTOP a resource replica while it runs a step, for three leases; the sweeper hands the
    step to the other replica. After SIGCONT the frozen worker's outcome must be refused."""
    cluster = make_cluster()
    cluster.start_standard(replicas={"resource": 2})
    lease = float(cluster.env["BATON_LEASE_SECONDS"])
    rounds, slow, background = scale(1, 3), scale(2, 4), scale(20, 100)
    frozen_attempts: list[tuple[str, str, tuple]] = []  # (task, owner, (step, phase, attempt)) held when frozen
    evidence: list[str] = []
    froze_mid_write = 0
    for round_ in range(rounds):
        began = time.monotonic()
        ids = [cluster.submit_with([HANG_ONCE], TaskStatus.SUCCESS, task_type="chaos_slow") for _ in range(slow)]
        round_ids = ids + cluster.submit_planned(background, seed=300 + round_)

        def claimed_slow_task(ids=ids):
            for task_id in ids:
                active = only_run(cluster.store.get(task_id))
                if active and active.State.value == "running" and active.Attempt == 1:
                    return task_id, active.Owner
            return None

        for _try in range(5):
            wait_until(lambda: claimed_slow_task() is not None, 20, "a slow step claimed")
            task_id, owner = claimed_slow_task()
            pid = owner_pid(owner)
            victim = next(n for n in cluster.module_names() if cluster.pid(n) == pid)
            proc = cluster.procs[victim]
            offset = proc.log_path.stat().st_size
            os.kill(pid, signal.SIGSTOP)
            frozen_at = time.time()
            time.sleep(0.2)
            if cluster.mongo_url or not store_write_locked(cluster.db_path):
                break
            # Frozen in the middle of a write: it holds SQLite's write lock, and every process
            # of the cluster waits for it. Not the fault this scenario is about: thaw, go again.
            os.kill(pid, signal.SIGCONT)
            froze_mid_write += 1
            time.sleep(0.5)
        else:
            raise AssertionError("every freeze caught the module holding the store's write lock")
        time.sleep(3 * lease - 0.2)
        held = [(t.TaskId, e.Actor, (e.Cursor, e.Phase, e.Attempt)) for t in cluster.tasks() for e in t.History
                if e.Event == "claimed" and owned_by(e.Actor, pid) and e.Time < frozen_at]
        os.kill(pid, signal.SIGCONT)
        thawed = time.monotonic()
        settle = cluster.settle(timeout=scale(60, 180), since=thawed)
        frozen_attempts += held
        after = proc.log_text()[offset:]
        seen = [short for m, short in LATE_WRITE_REFUSED.items() if m in after]
        evidence += seen
        report = cluster.check(ids=round_ids)
        record(f"SIGSTOP (round {round_ + 1})", report,
               f"{victim} frozen {3 * lease:g}s (lease {lease:g}s); thawed: {', '.join(seen) or 'nothing refused'}"
               + (f"; {froze_mid_write} freeze(s) mid-write redone" if froze_mid_write else ""),
               settle, time.monotonic() - began)
        assert_clean(cluster, report, round_ids)
        # The slow step the frozen replica held: its lease lapsed, a later attempt finished it.
        task = cluster.store.get(task_id)
        lapsed = [e for e in task.History if e.Event == "attempt_failed" and e.Actor == "sweeper" and e.Attempt == 1]
        assert lapsed and "lapsed" in lapsed[0].Message, task.History
        success = next(e for e in task.History if e.Event == "step_succeeded")
        assert success.Attempt >= 2, "the frozen attempt's outcome was committed after its lease was taken over"
    # Every attempt the frozen process held and the sweeper took away: no outcome of its own.
    tasks = {t.TaskId: t for t in cluster.tasks()}
    for task_id, owner, run in frozen_attempts:
        concluded = [e for e in tasks[task_id].History
                     if (e.Cursor, e.Phase, e.Attempt) == run and e.Event in CONCLUSIONS]
        swept = any(e.Actor == "sweeper" for e in concluded)
        late = [e for e in concluded if e.Actor == owner]
        assert not (swept and late), f"late write by the frozen worker: {late}"
    assert evidence, "the thawed worker's log shows no refused outcome or lost claim"


def test_hung_command_each_attempt_is_stopped_at_its_timeout_and_others_keep_running(make_cluster):
    """chaos_hang: timeout 2 s, 2 retries. Hanging attempts are stopped at the timeout, retried,
    and the mysql module keeps consuming other work meanwhile."""
    cluster = make_cluster(BATON_CONCURRENCY="4")  # two slots hang, two keep serving
    cluster.start_standard()
    recover, give_up, healthy = scale(1, 2), scale(1, 2), scale(10, 60)
    began = time.monotonic()
    hanging = [cluster.submit_with([{"command": "noop", "action": "hang", "times": 2}], TaskStatus.SUCCESS,
                                   task_type="chaos_hang") for _ in range(recover)]
    hanging += [cluster.submit_with([{"command": "noop", "action": "hang"}], TaskStatus.ROLLED_BACK,
                                    task_type="chaos_hang") for _ in range(give_up)]
    others = cluster.submit_planned(healthy, seed=400)
    settle = cluster.settle(timeout=scale(60, 180), since=began)
    report = cluster.check()
    timeout = 2.0
    durations = []
    for task_id in hanging:
        task = cluster.store.get(task_id)
        normal = [e for e in task.History if e.Phase is Phase.NORMAL]
        claims = {e.Attempt: e.Time for e in normal if e.Event == "claimed"}
        ends = {e.Attempt: (e.Time, e.Message) for e in normal
                if e.Event in ("attempt_failed", "step_failed", "step_succeeded")}
        assert sorted(claims) == [1, 2, 3], task.History
        for attempt, (ended, message) in ends.items():
            if "timed out" in message:
                durations.append(ended - claims[attempt])
                # Never before its timeout; how long after is the machine's load (the table prints it).
                assert timeout <= ended - claims[attempt], (attempt, ended - claims[attempt])
    hang_end = max(cluster.store.get(t).TimeEnd for t in hanging)
    assert all(cluster.store.get(t).TimeEnd < hang_end for t in others), "mysql stopped consuming during hangs"
    record("hung command (2s, 2 retries)", report,
           f"{len(durations)} hung attempts, longest {max(durations):.2f}s", settle, time.monotonic() - began)
    assert_clean(cluster, report)
    assert len(durations) == recover * 2 + give_up * 3


class IgnoringTheLock:
    """A store whose sweeper lock is always granted: two sweepers really sweep at the same time."""

    def __init__(self, store):
        self._store = store

    def try_lock(self, *_args, **_kwargs) -> bool:
        return True

    def release_lock(self, *_args, **_kwargs) -> None:
        return None

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_two_sweepers_at_once(make_cluster):
    """Two sweeper processes (the lock lets one sweep at a time; the holder is killed once and the
    other takes over) plus two in-process sweepers that ignore the lock and race on every task,
    while modules are killed (lapsed leases) and crash after commit (unsent outboxes)."""
    cluster = make_cluster()
    cluster.start_standard(sweepers=2)
    rng = random.Random(5)
    cycles, burst = scale(3, 12), scale(12, 25)
    config = SweepConfig(lease=2.0, redeliver_after=5.0, relay_grace=1.0, interval=0.1)
    stop = threading.Event()
    racers = [Sweeper(IgnoringTheLock(open_store(cluster.store_url)), cluster.broker, config, owner=f"racer-{i}")
              for i in range(2)]
    threads = [threading.Thread(target=r.run, args=(stop,), daemon=True) for r in racers]
    began = time.monotonic()
    kills = 0
    with Supervisor(cluster, [*cluster.module_names(), "sweeper", "sweeper-2"]) as supervisor:
        try:
            for thread in threads:
                thread.start()
            for cycle in range(cycles):
                cluster.submit_planned(burst, seed=500 + cycle)
                cluster.submit_with([crash("after_commit")], TaskStatus.SUCCESS)
                kills += bool(cluster.kill9(pick_busy_victim(cluster, rng)))
                if cycle == cycles // 2:
                    holder = lock_holder(cluster)
                    victim = next((n for n in ("sweeper", "sweeper-2") if holder and holder in cluster.procs[n].log_text()), None)
                    if victim:
                        cluster.kill9(victim)
                        kills += 1
                time.sleep(2.0)
            last = time.monotonic()
            settle = cluster.settle(timeout=scale(90, 300), since=last)
        finally:  # the racers end however the test does: else they sweep on after the cluster closed
            stop.set()
            for thread in threads:
                thread.join(120)  # a state: the racer ended its round; generous under load
        restarts = sum(supervisor.restarts.values())
    report = cluster.check()
    print(slowest(cluster.tasks()))
    swept = sweeper_totals(cluster)
    record("two sweepers (+2 lock-ignoring)", report,
           f"{kills} kill -9 ({restarts} restarts), {cycles} crash after_commit", settle, time.monotonic() - began)
    assert_clean(cluster, report)
    # The lock-ignoring racers sweep every 0.1 s and may heal everything before the sweeper
    # processes look: count what either kind healed (the racers' own metrics).
    raced = sum(
        r.metrics.registry.get_sample_value("baton_sweeper_actions_total", {"action": action}) or 0
        for r in racers for action in ("lease_lapsed", "relayed")
    )
    assert swept["lapsed"] + swept["relayed"] + raced > 0, (swept, raced)
    sweeping = [n for n in ("sweeper", "sweeper-2")
                if any(e.get("event") == "swept" for e in log_events(cluster.procs[n]))]
    assert sweeping or raced, "nothing swept anything"


def lock_holder(cluster) -> str | None:
    if cluster.mongo_url:
        doc = mongo_tasks(cluster.mongo_url).database["locks"].find_one({"_id": "sweeper"})
        return doc["owner"] if doc else None
    with sqlite3.connect(cluster.db_path, timeout=30) as db:
        row = db.execute("SELECT owner FROM locks WHERE name = 'sweeper'").fetchone()
    return row[0] if row else None
