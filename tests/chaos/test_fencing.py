"""A module replica frozen inside a command that writes to MariaDB, past its lease, while the other
replica rolls the task back: after SIGCONT, MariaDB and the inventory hold exactly what the
successful tasks own (the zombie writer).

Each round pins the freeze inside `init_instance`: the test holds `LOCK TABLES <meta>.instances
WRITE`, so the init that claims the task blocks on its first read of the ownership table. The
replica that claimed it, and its command children, are then frozen (SIGSTOP) and the table lock
released (the frozen session's read completes on the server; its answer waits in the socket).
The lease lapses, the other replica takes the step over, `deduct_resource` fails on purpose, and
the task is rolled back (`clean_instance`, `restore_resource`). Then the command child is thawed
first and its module after it: the worst order, since the module's lease keeper would otherwise
stop the command as soon as it noticed the lost lease. Without fencing, the thawed init finds no
ownership row and creates the database and user again, for a task that says ROLLED_BACK.

Measured on the way: how long the frozen replica's claimed step waits to be taken over (the
lease), and how long the deliveries the frozen replica held but never claimed wait (the broker
closes a frozen connection after its AMQP heartbeat timeout and hands them to the other replica).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from common.settings import load_settings
from common.engine.states import Phase, TaskStatus
from tests.chaos.evidence import assert_clean
from tests.chaos.owned import add_host, assert_only_successes_own_anything
from tests.chaos.plans import DEDUCT_FAILS, SCENARIO_TIMEOUT, scale
from tests.chaos.test_process_faults import store_write_locked
from tests.chaos.report import record
from tests.support.builders import only_run
from tests.support.cluster import wait_until
from tests.support.process_tree import descendants
from tests.support.mariadb import connect, mariadb_sandbox

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(SCENARIO_TIMEOUT)]

# What the mysql replicas log about the frozen attempt, and a short name for the report.
THAWED = {
    "ending the holder's session": "frozen session killed",
    "outcome discarded": "outcome discarded",
    "outcome refused": "outcome refused",
}
TAKEOVER: dict[str, list[float]] = {"claimed step": [], "held deliveries": []}  # seconds, all rounds


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def waiting_on_table_lock(meta: str) -> bool:
    """A statement on the meta schema waits for our table lock: the ownership read, or (in a
    command process's first command) creating the meta schema."""
    with contextlib.closing(connect()) as conn, conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                    "WHERE STATE LIKE %s AND INFO LIKE %s", ("%metadata lock%", f"%{meta}%"))  # fmt: skip
        return cur.fetchone()[0] > 0


def freeze_outside_a_store_write(cluster, pid: int) -> None:
    """SIGSTOP the module, but not in the middle of a SQLite write (its lease keeper renewing):
    that would stall every process of the cluster, which is SQLite's nature, not this fault
    (see tests/chaos/README.md). Thaw for a moment and freeze again until it holds no lock."""
    for _try in range(20):
        os.kill(pid, signal.SIGSTOP)
        if not store_write_locked(cluster.db_path, wait=0.5):
            return
        os.kill(pid, signal.SIGCONT)
        time.sleep(0.05)
    raise AssertionError("every freeze caught the module holding the store's write lock")


def history_time(task, event: str, cursor: int, attempt: int | None = None) -> float | None:
    for e in task.History:
        if e.Event == event and e.Cursor == cursor and e.Phase is Phase.NORMAL and attempt in (None, e.Attempt):
            return e.Time
    return None


def test_a_frozen_replica_never_recreates_what_the_rollback_removed(make_cluster):
    # Every round is the same fault; the normal test run does one (each takes a lease and the
    # broker's heartbeat timeout to play out), make chaos ten.
    rounds, background = scale(1, 10), scale(4, 8)
    with mariadb_sandbox() as sandbox:
        cluster = make_cluster(
            **sandbox.env(), BATON_MYSQL_LOCK_WAIT_SECONDS="2",
            # The default: a held delivery is then re-sent by the sweeper only after a minute,
            # so what hands it over within seconds is the broker's heartbeat.
            BATON_REDELIVER_AFTER_SECONDS="60",
        )
        inventory = add_host(cluster.store_url)
        cluster.start_standard(replicas={"mysql": 2})
        lease = float(cluster.env["BATON_LEASE_SECONDS"])
        began = time.monotonic()
        # Warm up both replicas' command children (the meta schema exists before any lock).
        warm = [cluster.submit_with([], TaskStatus.SUCCESS, task_type="chaos_mysql", name=sandbox.name(f"w{i}"))
                for i in range(2)]
        for task_id in warm:
            cluster.wait_final(task_id, 60)
        ids = list(warm)
        for round_ in range(rounds):
            round_began = time.monotonic()
            locker = connect()
            with locker.cursor() as cur:
                cur.execute(f"LOCK TABLES `{sandbox.meta_schema}`.instances WRITE")
            try:
                doomed = cluster.submit_with(DEDUCT_FAILS, TaskStatus.ROLLED_BACK, task_type="chaos_mysql",
                                             name=sandbox.name(f"r{round_}"))  # fmt: skip
                ids.append(doomed)

                def init_claimed(task_id=doomed):
                    run = only_run(cluster.store.get(task_id))
                    return run is not None and run.Cursor == 1 and run.State.value == "running"

                wait_until(init_claimed, 60, "init_instance claimed")
                owner = only_run(cluster.store.get(doomed)).Owner
                wait_until(lambda: waiting_on_table_lock(sandbox.meta_schema), 20, "init blocked on the table")
                module_pid = int(owner.split(":")[1])
                victim = next(n for n in cluster.module_names() if cluster.pid(n) == module_pid)
                children = descendants(module_pid)
                signal_all(children, signal.SIGSTOP)
                freeze_outside_a_store_write(cluster, module_pid)
                frozen_at = time.time()
            finally:
                with locker.cursor() as cur:
                    cur.execute("UNLOCK TABLES")
                locker.close()
            offsets = {n: cluster.procs[n].log_path.stat().st_size for n in cluster.module_names() if "mysql" in n}
            # Work arriving while it is frozen: some is delivered to the frozen replica.
            fed = [cluster.submit_with([], TaskStatus.SUCCESS) for _ in range(background)]
            ids += fed
            rolled_back = cluster.wait_final(doomed, 90)
            assert rolled_back.TaskStatus is TaskStatus.ROLLED_BACK, rolled_back.History
            wait_until(lambda: all(history_time(cluster.store.get(t), "claimed", 1) for t in fed), 90,
                       "every fed task's mysql step claimed")  # fmt: skip
            taken = history_time(rolled_back, "claimed", 1, attempt=2)
            TAKEOVER["claimed step"].append(taken - frozen_at)
            held = [history_time(t, "claimed", 1) - history_time(t, "dispatched", 1)
                    for t in map(cluster.store.get, fed)]
            TAKEOVER["held deliveries"].append(max(held))
            # Thaw: the command first, then its module (see the module docstring).
            signal_all(children, signal.SIGCONT)
            time.sleep(0.5)
            signal_all([module_pid], signal.SIGCONT)
            thawed = time.monotonic()
            victim_log = lambda: cluster.procs[victim].log_text()[offsets[victim]:]  # noqa: E731
            wait_until(lambda: "outcome discarded" in victim_log() or "outcome refused" in victim_log(), 30,
                       "the frozen attempt's outcome discarded or refused")  # fmt: skip
            after = "".join(cluster.procs[n].log_text()[o:] for n, o in offsets.items())
            seen = sorted({short for text, short in THAWED.items() if text in after})
            ok = cluster.submit_with([], TaskStatus.SUCCESS, task_type="chaos_mysql", name=sandbox.name(f"s{round_}"))
            ids.append(ok)
            settle = cluster.settle(timeout=scale(90, 180), since=thawed)
            report = cluster.check(ids=ids)
            record(f"frozen mid-init (round {round_ + 1})", report,
                   f"{victim} + {len(children)} children frozen {time.time() - frozen_at:.0f}s in init_instance "
                   f"(lease {lease:g}s); take-over: claimed step {TAKEOVER['claimed step'][-1]:.1f}s, "
                   f"held deliveries {TAKEOVER['held deliveries'][-1]:.1f}s; seen: {', '.join(seen) or '-'}",
                   settle, time.monotonic() - round_began)  # fmt: skip
            assert_clean(cluster, report, ids)
            assert_only_successes_own_anything(cluster, sandbox, inventory)
        print(f"\nCHAOS take-over of a frozen replica (lease {lease:g}s, AMQP heartbeat "
              f"{load_settings().broker_heartbeat_seconds}s): "
              + "; ".join(f"{k} max {max(v):.1f}s" for k, v in TAKEOVER.items()))
        record("frozen mid-init: take-over", cluster.check(ids=ids),
               "; ".join(f"{k}: max {max(v):.1f}s over {len(v)} freezes" for k, v in TAKEOVER.items()),
               0.0, time.monotonic() - began)  # fmt: skip
