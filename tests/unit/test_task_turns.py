"""Threads of one process take turns on a task (common.store.tasks.turns): on a real SQLite
store, eight threads changing one document lose no compare-and-set race to each other."""

from __future__ import annotations

import threading
import time
from typing import Any

from common.engine.document import Task
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.store.tasks.turns import _locks, task_turn
from common.engine.core.entries import Timing, create_task
from tests.support.builders import make_step
from tests.support.cluster import STATE_DEADLINE


class CountedWrites:
    """The real store, counting compare-and-sets that matched nothing."""

    def __init__(self, inner: SqliteStore):
        self._inner = inner
        self.lost = 0
        self._count = threading.Lock()

    def compare_and_set(self, task: Task, expected_version: int) -> bool:
        written = self._inner.compare_and_set(task, expected_version)
        if not written:
            with self._count:
                self.lost += 1
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _labelled(key: str):
    def change(task: Task) -> Task:
        new = task.clone()
        new.Labels[key] = str(int(new.Labels.get(key, "0")) + 1)
        time.sleep(0.001)  # a change takes a while (a 90 KB fan-out document takes milliseconds)
        return new

    return change


def test_threads_of_one_process_do_not_race_for_one_document(tmp_path):
    inner = SqliteStore(tmp_path / "t.db")
    store = CountedWrites(inner)
    try:
        task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(time.time()))
        inner.insert(task)

        def work(n: int) -> None:
            for _ in range(20):
                mutate(store, task.TaskId, _labelled(f"k{n}"))  # type: ignore[arg-type]

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stored = inner.get(task.TaskId)
        assert stored is not None
        assert stored.Labels == {f"k{n}": "20" for n in range(8)}  # nothing lost, as before
        assert store.lost == 0  # before the turns: hundreds of reads and changes thrown away
        assert _locks == {}  # the table forgets a task once no thread works on it
    finally:
        inner.close()


def test_turns_of_different_tasks_do_not_wait_for_each_other():
    entered = threading.Event()

    def other_task() -> None:
        with task_turn("b"):
            entered.set()

    with task_turn("a"):
        other = threading.Thread(target=other_task)
        other.start()
        other.join(timeout=STATE_DEADLINE)  # ends at once unless "a" blocks "b"
        assert entered.is_set()  # while "a" is still held
    assert _locks == {}
