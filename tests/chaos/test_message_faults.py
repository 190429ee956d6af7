"""Messages gone wrong: every message delivered twice, a module queue purged mid-run, poison.

Delivering every message twice without a hook in production code: the test installs a SQLite
trigger in the scenario's own store file that logs every outbox entry a change adds (the store
is the source of the outbox; OSS, modules and sweeper all write it), and a duplicator thread in
the test publishes a second copy of each entry, same body, message id and priority, to the same
queue once it is due. Each module therefore receives each step message (and the monitor each
alarm) at least twice, in either order.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import threading
import time
from urllib.parse import unquote, urlsplit

import pytest

from common.engine.document import StepMessage
from tests.support.test_store import cluster_store
from common.queues import dead_letter_queue
from common.store.sqlite.items import SqliteItemStore
from common.engine.states import Phase
from tests.chaos.evidence import assert_clean, drain, log_events, redispatch_excess, unrecovered
from tests.chaos.harness import Feeder
from tests.support.cluster import STATE_DEADLINE
from tests.support.vhosts import rabbitmqctl
from tests.chaos.plans import MODULES, SCENARIO_TIMEOUT, scale
from tests.chaos.report import record
from tests.chaos.test_fencing import freeze_outside_a_store_write

pytestmark = [pytest.mark.chaos, pytest.mark.rabbitmq, pytest.mark.slow,
              pytest.mark.timeout(SCENARIO_TIMEOUT)]

OUTBOX_LOG = """
CREATE TABLE IF NOT EXISTS chaos_outbox_log (id INTEGER PRIMARY KEY, entry TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS chaos_outbox_on_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO chaos_outbox_log (entry) SELECT value FROM json_each(NEW.doc, '$.Outbox');
END;
CREATE TRIGGER IF NOT EXISTS chaos_outbox_on_update AFTER UPDATE ON tasks BEGIN
    INSERT INTO chaos_outbox_log (entry)
    SELECT n.value FROM json_each(NEW.doc, '$.Outbox') AS n
    WHERE json_extract(n.value, '$.DispatchId') NOT IN
          (SELECT json_extract(o.value, '$.DispatchId') FROM json_each(OLD.doc, '$.Outbox') AS o);
END;
-- The dispatches of items kept in records of their own (docs/design/item-records.md) are in their
-- records.
CREATE TRIGGER IF NOT EXISTS chaos_item_outbox_on_insert AFTER INSERT ON task_items BEGIN
    INSERT INTO chaos_outbox_log (entry) SELECT value FROM json_each(NEW.doc, '$.Outbox');
END;
CREATE TRIGGER IF NOT EXISTS chaos_item_outbox_on_update AFTER UPDATE ON task_items BEGIN
    INSERT INTO chaos_outbox_log (entry)
    SELECT n.value FROM json_each(NEW.doc, '$.Outbox') AS n
    WHERE json_extract(n.value, '$.DispatchId') NOT IN
          (SELECT json_extract(o.value, '$.DispatchId') FROM json_each(OLD.doc, '$.Outbox') AS o);
END;
"""


class Duplicator:
    """Publishes a copy of every outbox entry the store's trigger logged, once it is due."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.copies = 0
        self.step_copies = 0
        self.error: BaseException | None = None
        self.skipped = 0  # entries a relay applies to the store: nothing to publish
        SqliteItemStore(cluster.db_path).close()  # its table, for the triggers on it
        with contextlib.closing(sqlite3.connect(cluster.db_path, timeout=30)) as db:
            db.executescript(OUTBOX_LOG)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-duplicator", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_exc):
        self._stop.set()
        self._thread.join(30)

    def drain(self, timeout: float = 30) -> None:
        """Wait until every logged entry has been copied."""
        deadline = time.monotonic() + max(timeout, STATE_DEADLINE)
        while self.logged() > self.copies + self.skipped and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.error:
            raise self.error

    def logged(self) -> int:
        with contextlib.closing(sqlite3.connect(self.cluster.db_path, timeout=30)) as db:
            return db.execute("SELECT count(*) FROM chaos_outbox_log").fetchone()[0]

    def _run(self) -> None:
        last = 0
        waiting: list[dict] = []
        try:
            with contextlib.closing(sqlite3.connect(self.cluster.db_path, timeout=30)) as db:
                while not self._stop.is_set() or waiting:
                    rows = db.execute("SELECT id, entry FROM chaos_outbox_log WHERE id > ? ORDER BY id", (last,)).fetchall()
                    for row_id, text in rows:
                        last = row_id
                        waiting.append(json.loads(text))
                    now = time.time()
                    due = [e for e in waiting if e["DueAt"] <= now]
                    waiting = [e for e in waiting if e["DueAt"] > now]
                    for entry in due:
                        if not entry["Queue"]:  # applied to the store by a relay, never published
                            self.skipped += 1
                            continue
                        body = json.dumps(entry["Body"], separators=(",", ":")).encode()
                        self.cluster.broker.publish(entry["Queue"], body, priority=entry["Priority"],
                                                    message_id=entry["DispatchId"])
                        self.copies += 1
                        self.step_copies += entry["Queue"] in MODULES
                    if self._stop.is_set() and not rows:
                        waiting = [e for e in waiting if e["DueAt"] <= now + 5]
                    time.sleep(0.01)
        except Exception as exc:  # noqa: BLE001  (a background thread: re-raised by drain())
            self.error = exc


def module_events(cluster, event: str) -> int:
    return sum(1 for name in cluster.module_names() for e in log_events(cluster.procs[name]) if e.get("event") == event)


def test_every_message_delivered_twice(make_cluster):
    if cluster_store() == "mongo":
        pytest.skip("the duplicator learns of outbox entries from a SQLite trigger; SQLite only")
    cluster = make_cluster()
    cluster.start_standard()
    count = scale(40, 300)
    began = time.monotonic()
    with Duplicator(cluster) as duplicator:
        feeder = Feeder(cluster, count, seconds=scale(4.0, 30.0), seed=41).start()
        feeder.join()
        cluster.settle(timeout=scale(60, 240))
        duplicator.drain()
        settle = cluster.settle(timeout=60, since=feeder.finished_at)  # the last copies consumed too
    report = cluster.check()
    dropped = module_events(cluster, "delivery dropped")
    record("every message delivered twice", report,
           f"{duplicator.copies} copies published, {dropped} deliveries dropped by the claim",
           settle, time.monotonic() - began)
    assert_clean(cluster, report)
    # One dispatch is claimed at most once: of its two (or more) deliveries the rest are dropped.
    assert duplicator.step_copies >= report.executions - report.duplicate_executions
    assert dropped >= duplicator.step_copies - report.duplicate_executions


def freeze_until_backlog(cluster, module: str, within: float):
    """SIGSTOP the module until its queue holds a message (at most `within` seconds); returns
    the function that thaws it."""
    pid = cluster.pid(module)
    freeze_outside_a_store_write(cluster, pid)
    deadline = time.monotonic() + within
    while not cluster.broker.queue_depth(module) and time.monotonic() < deadline:
        time.sleep(0.01)
    return lambda: os.kill(pid, signal.SIGCONT)


def test_module_queue_purged_mid_run_then_module_down_past_redeliver_after(make_cluster):
    """Purge the mysql queue while tasks flow; the sweeper re-publishes every dispatch nobody
    claimed within BATON_REDELIVER_AFTER_SECONDS (1 s here). mysql runs one step at a time
    (resource two or four), so a backlog builds in its queue for the purge to hit.

    Then mysql is down for several periods while tasks keep coming: their step-1 messages wait,
    not lost. The sweeper may re-publish them, with backoff (once per period was a redelivery
    storm: the full run of this scenario grew the mysql queue to 13,162 messages)."""
    redeliver = 1.0
    cluster = make_cluster(BATON_REDELIVER_AFTER_SECONDS=f"{redeliver:g}")
    cluster.start_standard(env={"mysql": {"BATON_CONCURRENCY": "1"}})
    count, want = scale(60, 300), scale(10, 60)
    began = time.monotonic()
    feeder = Feeder(cluster, count, seconds=scale(1.0, 3.0), seed=51).start()
    drained: list[dict] = []
    # However fast or loaded the machine, a purge finds a backlog: mysql is frozen (SIGSTOP, for
    # less than a lease) until one builds and is purged, again after a thaw (its lease renewed)
    # while the feeder's tasks have not yet reached it.
    purges = 0
    while not drained and purges < 20:
        thaw = freeze_until_backlog(cluster, "mysql", within=1.5)
        drained += drain(cluster.broker_url, "mysql")
        thaw()
        purges += 1
        if not drained:
            time.sleep(1.0)  # a lease's renewal before the next freeze
    stop_at, last = time.monotonic() + scale(4.0, 10.0), time.monotonic()
    while len(drained) < want and time.monotonic() < stop_at:
        if cluster.broker.queue_depth("mysql"):
            removed = drain(cluster.broker_url, "mysql")  # a purge that says what it removed
            drained += removed
            purges += 1
            if removed:
                last = time.monotonic()
        time.sleep(0.01)
    purged = len(drained)
    feeder.join()
    settle = cluster.settle(timeout=scale(60, 240), since=max(last, feeder.finished_at))
    report = cluster.check()
    redispatched = sum(1 for t in cluster.tasks() for e in t.History if e.Event == "redispatched")
    record("mysql queue purged mid-run", report, f"{purged} messages purged in {purges} purges", settle,
           time.monotonic() - began)
    assert_clean(cluster, report)
    assert purged > 0, "the mysql queue never held a message to purge"
    # Every purged dispatch was claimed: re-published by the sweeper (a redispatch)
    # or, for an entry not yet marked sent, by the outbox relay. (Counting redispatches against
    # purged messages failed now and then: a purge also takes the relay's copies.)
    assert not unrecovered(cluster.tasks(), drained), unrecovered(cluster.tasks(), drained)[:10]
    assert redispatched > 0, "the sweeper re-published none of the purged dispatches"
    assert not redispatch_excess(cluster.tasks(), redeliver), redispatch_excess(cluster.tasks(), redeliver)[:10]

    # Phase 2: mysql down (kill -9, restarted only later) while tasks keep arriving.
    # Four redelivery periods: enough for the backoff to show (re-published after 1 s, then 2 s
    # later, where a storm would re-publish every second).
    down = scale(4.0, 20.0)
    began = time.monotonic()
    before = {t.TaskId for t in cluster.tasks()}
    cluster.kill9("mysql")
    ids = cluster.submit_planned(scale(20, 100), seed=52)
    time.sleep(down)
    cluster.respawn("mysql")
    back = time.monotonic()
    cluster.wait_ready(["mysql"])
    settle = cluster.settle(timeout=scale(60, 240), since=back)
    report = cluster.check(ids=ids)
    tasks = [t for t in cluster.tasks() if t.TaskId not in before]
    copies = sum(1 for t in tasks for e in t.History if e.Event == "redispatched")
    record(f"mysql down {down:g}s (> redeliver {redeliver:g}s)", report,
           f"{copies} re-publications of {sum(1 for t in tasks if t.TaskCursor >= 1)} waiting runs",
           settle, time.monotonic() - began)
    assert_clean(cluster, report, ids)
    excess = redispatch_excess(tasks, redeliver)
    assert not excess, "re-published without backoff:\n  " + "\n  ".join(excess[:10])


def poison_messages(count: int) -> list[tuple[str, bytes]]:
    """`count` messages no module can act on, spread over the module queues."""
    wrong_module = StepMessage(TaskId="t", Cursor=0, Type=Phase.NORMAL, Module="nobody", Command="noop",
                               Timeout=1, Retry=0, DispatchId="d", Attempt=1).model_dump(mode="json")
    kinds = [
        b"not json at all",
        b"\x00\xff\xfe binary",
        json.dumps({"TaskId": "x", "Cursor": -1}).encode(),
        json.dumps({**wrong_module, "Timeout": 0}).encode(),
        json.dumps(wrong_module).encode(),  # valid, but for a module that is not this queue's
        b"[]",
        b"",
    ]
    return [(MODULES[i % len(MODULES)], kinds[i % len(kinds)]) for i in range(count)]


def consumers(cluster) -> set[tuple[str, str, str]]:
    """(queue, channel pid, consumer tag) of every consumer: a restarted consumer changes them."""
    vhost = unquote(urlsplit(cluster.broker_url).path.lstrip("/"))
    out = rabbitmqctl("list_consumers", "-q", "--no-table-headers", "-p", vhost,
                      "queue_name", "channel_pid", "consumer_tag", timeout=STATE_DEADLINE)  # fmt: skip
    return {tuple(line.split()[:3]) for line in out.splitlines() if len(line.split()) >= 3}


def test_a_hundred_poison_messages_all_dead_lettered_no_consumer_restarts(make_cluster):
    cluster = make_cluster()
    cluster.start_standard()
    count = scale(100, 1000)
    pids = {name: cluster.pid(name) for name in cluster.module_names()}
    before = consumers(cluster)
    began = time.monotonic()
    feeder = Feeder(cluster, scale(20, 200), seconds=scale(2.0, 10.0), seed=61).start()
    poison = poison_messages(count)
    for queue, body in poison:
        cluster.broker.publish(queue, body)
    published = time.monotonic()
    feeder.join()
    expected = {dead_letter_queue(q): sum(1 for p, _ in poison if p == q) for q in MODULES}
    settle = cluster.settle(timeout=scale(60, 240), expected_dead_letters=expected,
                            since=max(published, feeder.finished_at))
    alarms = [a for a in cluster.store.list_alarms(limit=1_000_000) if a.Kind == "dead_letter"]
    report = cluster.check(expected_dead_letters=expected)
    record(f"{count} poison messages", report, f"{count} poison, {sum(expected.values())} expected dead letters",
           settle, time.monotonic() - began)
    assert_clean(cluster, report)
    assert len(alarms) == count, f"{len(alarms)} dead-letter alarms for {count} poison messages"
    assert {name: cluster.pid(name) for name in cluster.module_names()} == pids, "a module process restarted"
    after = consumers(cluster)
    assert after == before, f"consumers changed: gone {before - after}, new {after - before}"
