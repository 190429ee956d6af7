"""The store threads of a module process: claims and outcome commits.

A commit goes ahead of every claim still waiting. With hundreds of async commands in flight, a
first-in-first-out queue put each commit behind the claims of every delivery that had arrived
meanwhile: a step's end, and with it the next step's message, waited on new work being taken, and
the longer wait made the next claim come after the outbox entry's deferred mark-sent, a write of
its own (common.relay.outbox_marks). Finishing work in flight before taking more also keeps the
number of steps held at once, and their leases, down.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

import structlog

from common.logging import exception_summary

log = structlog.get_logger(__name__)
Job = Callable[[], object]


class StorePool:
    def __init__(self, threads: int, name: str = "baton-store"):
        self._ready = threading.Condition()
        self._commits: deque[Job] = deque()
        self._claims: deque[Job] = deque()
        self._closed = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{n}", daemon=True) for n in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, job: Job, *, commit: bool = False) -> None:
        """Run `job` on a store thread: a commit before any claim waiting. RuntimeError once shut."""
        with self._ready:
            if self._closed:
                raise RuntimeError("the store pool is shut")
            (self._commits if commit else self._claims).append(job)
            self._ready.notify()

    def shutdown(self) -> None:
        """Drop the jobs still waiting and wait for the running ones to end."""
        with self._ready:
            self._closed = True
            self._commits.clear()
            self._claims.clear()
            self._ready.notify_all()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join()

    def _work(self) -> None:
        while (job := self._next()) is not None:
            try:
                job()
            except Exception as exc:  # a job's own failure must not take its thread with it
                log.error("store work failed", error=type(exc).__name__, where=exception_summary(exc))

    def _next(self) -> Job | None:
        with self._ready:
            while not (self._commits or self._claims or self._closed):
                self._ready.wait()
            if self._commits:
                return self._commits.popleft()
            if self._claims:
                return self._claims.popleft()
            return None  # shut, nothing left
