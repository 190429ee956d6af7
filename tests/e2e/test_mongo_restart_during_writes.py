"""The database server killed (-9) and started again on the same files and port while writers run
a stream of compare-and-sets: every acknowledged change is there, none is there twice.

What a single-node wire-protocol server allows of a failover: the primary disappears mid-write
and comes back. Writers in threads each change a few tasks through `mutate`, every change
naming itself (its token is appended, a counter raised). Afterwards, for each task:

- every change whose `mutate` returned is in the document (never lost);
- the counter equals the number of tokens and no token appears twice (never applied twice);
- a change whose call raised (the server stayed away longer than the store timeout) may or may
  not be there: the caller was told "unavailable", not "no";
- the version counts exactly the changes in the document.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from common.errors import StoreError
from common.engine.document import Task
from common.engine.core.entries import Refusal, Timing, create_task
from common.store.mongo.tasks import MongoStore
from common.store.tasks.mutate import mutate
from tests.contract.store_documents import mysql_steps
from tests.support.secantus import secantus_server
from tests.support.cluster import STATE_DEADLINE

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TASKS, WRITERS, RESTARTS = 3, 4, 2


def bump(token: str):
    def change(task: Task) -> Task:
        task.Parameters = {"n": task.Parameters["n"] + 1, "w": [*task.Parameters["w"], token]}
        return task

    return change


class Writer(threading.Thread):
    def __init__(self, url: str, number: int, task_ids: list[str], stop: threading.Event):
        super().__init__(daemon=True)
        self.store = MongoStore(url, "restart", timeout_seconds=15)
        self.number, self.task_ids, self.stop = number, task_ids, stop
        self.acknowledged: list[tuple[str, str]] = []  # (task, token) whose mutate returned
        self.unknown: list[tuple[str, str]] = []  # raised: may or may not be stored
        self.failed: list[str] = []

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            task_id = self.task_ids[n % len(self.task_ids)]
            token = f"w{self.number}-{n}"
            n += 1
            try:
                result = mutate(self.store, task_id, bump(token))
            except StoreError:
                self.unknown.append((task_id, token))
                continue
            if isinstance(result, Refusal):
                self.failed.append(f"{token}: refused {result}")
            else:
                self.acknowledged.append((task_id, token))


def test_a_server_restart_during_compare_and_sets_loses_nothing_and_doubles_nothing(tmp_path: Any) -> None:
    with secantus_server("baton-restart") as server:
        url = server.database_url("restart")
        setup = MongoStore(url, "restart")
        tasks = [create_task(task_type="create_mysql", steps=mysql_steps(2), parameters={"n": 0, "w": []},
                             timing=Timing(now=time.time())) for _ in range(TASKS)]  # fmt: skip
        for task in tasks:
            setup.insert(task)
        setup.close()
        stop = threading.Event()
        writers = [Writer(url, n, [t.TaskId for t in tasks], stop) for n in range(WRITERS)]
        for writer in writers:
            writer.start()
        try:
            for _ in range(RESTARTS):
                _wait_for_progress(writers, 20)
                server.kill9()  # the writes in flight lose their answers
                time.sleep(0.5)
                server.start()
            _wait_for_progress(writers, 20)
        finally:
            stop.set()
            for writer in writers:
                writer.join(60)
        check = MongoStore(url, "restart")
        try:
            stored = {t.TaskId: check.get(t.TaskId) for t in tasks}
        finally:
            check.close()
            for writer in writers:
                writer.store.close()
    assert not [f for w in writers for f in w.failed]
    acknowledged = [a for w in writers for a in w.acknowledged]
    unknown = {u for w in writers for u in w.unknown}
    print(f"\n{len(acknowledged)} changes acknowledged, {len(unknown)} raised across {RESTARTS} restarts")
    for original in tasks:
        task = stored[original.TaskId]
        assert task is not None
        tokens = task.Parameters["w"]
        assert len(tokens) == len(set(tokens)), "a change applied twice"
        assert task.Parameters["n"] == len(tokens)
        assert task.Version == original.Version + len(tokens)
        mine = {token for task_id, token in acknowledged if task_id == original.TaskId}
        assert mine <= set(tokens), f"acknowledged changes lost: {sorted(mine - set(tokens))}"
        extra = set(tokens) - mine
        assert extra <= {token for task_id, token in unknown if task_id == original.TaskId}


def _wait_for_progress(writers: list[Writer], count: int) -> None:
    """Until every writer has `count` more acknowledged changes (a condition, not a time)."""
    wanted = [len(w.acknowledged) + count for w in writers]
    deadline = time.monotonic() + STATE_DEADLINE
    while any(len(w.acknowledged) < n for w, n in zip(writers, wanted, strict=True)):
        assert time.monotonic() < deadline, "the writers made no progress"
        time.sleep(0.05)
