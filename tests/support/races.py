"""Races for the store contract suites: the same call made at once from many threads, each with
its own handle, or from many spawned processes, each opening its own store where the backend
lives (tests/contract/inventory_fixtures.py's Backend)."""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def handles(open_one: Callable[[], Any], count: int) -> Iterator[list[Any]]:
    """`count` handles on one store, each its own as each process has, closed at the end."""
    opened = [open_one() for _ in range(count)]
    try:
        yield opened
    finally:
        for handle in opened:
            handle.close()


def race_threads(workers: int, work: Callable[[int], Any]) -> list[Any]:
    """Run work(i) on `workers` threads released together; their results (or exceptions), by i."""
    barrier = threading.Barrier(workers)
    results: list[Any] = [None] * workers

    def run(i: int) -> None:
        barrier.wait(timeout=30)
        try:
            results[i] = work(i)
        except Exception as exc:  # collected: the test looks at every outcome
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


def race_processes(backend: Any, entry: Callable[..., None], workers: int, *extra: Any) -> int:
    """Run entry(where, worker, start, wins, *extra) in `workers` spawned processes released
    together (`where`: what `open_where` needs; `start`: their barrier); how many times they
    counted a win (`won(wins)`). Every process must exit cleanly.

    The barrier waits up to STATE_DEADLINE for the last process (its own timeout, which the
    processes get with it): a spawned process's imports take seconds, far more on a loaded
    machine. Imported here, not at the top: each process imports this module again."""
    from tests.support.cluster import STATE_DEADLINE

    context = multiprocessing.get_context("spawn")
    start, wins = context.Barrier(workers, timeout=STATE_DEADLINE), context.Value("i", 0)
    where = (backend.kind, backend.sqlite_path, backend.mongo_url, backend.database)
    processes = [context.Process(target=entry, args=(where, w, start, wins, *extra)) for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=STATE_DEADLINE)
        assert process.exitcode == 0
    return wins.value


def open_where(where: tuple, sqlite: Callable[[str], Any], mongo: Callable[[str, str], Any]) -> Any:
    """In a spawned process: its own handle on the backend `where` names (a real server for mongo)."""
    kind, path, url, database = where
    return sqlite(path) if kind == "sqlite" else mongo(url, database)


def won(wins: Any) -> None:
    with wins.get_lock():
        wins.value += 1
