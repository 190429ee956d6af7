"""The pool an async command's blocking calls are handed off to (`run_in_executor(None, fn)`,
`ctx.check_fence_async`), the module's event loop's default executor.

Its threads are daemons. A call that never returns (a hung C library, a socket without a
timeout) holds its thread for good, as a hung thread command does; the standard library's
ThreadPoolExecutor joins its threads when the interpreter exits, so one such call kept the module
from ever exiting after SIGTERM. Here the process exits past them, and their late side effects
are refused by the fence, as an abandoned thread command's are.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_STOP = None


class DaemonThreadPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor in type only: asyncio's `set_default_executor` takes nothing else.
    It shares none of the base class's machinery (its __init__ is not called): `submit` and
    `shutdown` are its own, and `map` is Executor's, built on `submit`."""

    def __init__(self, max_threads: int, name: str = "baton-offload"):
        self._max = max_threads
        self._name = name
        self._work: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple, dict] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)  # released by a thread each time it is free again
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._shut:
                raise RuntimeError("the offload pool is shut")
            self._work.put((future, fn, args, kwargs))
            # As the standard library's pool: a free thread takes it, else a new one up to the limit.
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                thread = threading.Thread(target=self._run, name=f"{self._name}_{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in threads:
            self._work.put(_STOP)
        if wait:
            for thread in threads:
                thread.join()

    def _run(self) -> None:
        while (item := self._work.get()) is not _STOP:
            future, fn, args, kwargs = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as exc:  # the awaiting coroutine gets it, as from any executor
                    future.set_exception(exc)
            del item, future, fn, args, kwargs  # nothing of a finished call stays referenced
            self._idle.release()
