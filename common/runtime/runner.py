"""Runs `process` commands in child processes with a hard timeout (see common/runtime/child.py)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import structlog

from common.runtime.child import child_main
from common.runtime.invoke import MAX_MESSAGE, CommandRequest, bounded_message, result_of
from common.runtime.registry import registry_module
from common.engine.states import ResultCode
from common.engine.changes import AttemptResult
from common.tracing.adopt import adopt_spans

log = structlog.get_logger(__name__)


class CommandInterrupted(Exception):
    """The runner was closed (shutdown) while the command ran: not the command's failure."""
POLL_SLICE = 0.1  # how often a waiting slot checks whether its lease was lost


@dataclass(eq=False)  # identity, not value: children are kept in a set
class _Child:
    process: BaseProcess
    conn: Connection

    def kill(self) -> None:
        """Idempotent: shutdown (close) and the worker using the child may both get here."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # type: ignore[arg-type]
        self.process.join(timeout=5)
        with contextlib.suppress(OSError):
            self.conn.close()


class CommandRunner:
    def __init__(
        self,
        registry_ref: str,
        size: int,
        fault_injection: bool = False,
        log_format: str = "console",
        log_level: str = "info",
        store_url: str | None = None,
    ):
        self._registry_ref = registry_ref
        self._store_url = store_url  # the children read tasks from it to check fencing tokens
        self._log = (log_format, log_level)
        self._size = size
        self._fault_injection = fault_injection
        # Children are forked from a forkserver that imported the registry once: a new child is
        # ready in milliseconds, not the 0.6-1.2 s a spawned one spends on its imports. A retry
        # right after a timeout (its child killed) otherwise waited for that inside its attempt.
        # The forkserver is a clean single-threaded process, so forking it is safe, and it exits
        # when this process dies (EOF on its pipe), taking the children with it (tether.py).
        # One forkserver per process: where one process runs several runners, the first one's
        # preload counts, and the others' children import their registry themselves.
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["common.runtime.child", registry_module(registry_ref)])
        self._idle: queue.SimpleQueue[_Child | None] = queue.SimpleQueue()
        self._all: set[_Child] = set()
        self._lock = threading.Lock()
        self._closing = False
        self._refills: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self._refiller: threading.Thread | None = None

    def start(self, ready_timeout: float = 60.0) -> None:
        """Start every child now: a module is ready only once it can run a command at once."""
        children = [self._spawn() for _ in range(self._size)]
        for child in children:
            self._await_ready(child, ready_timeout)
            self._idle.put(child)

    def run(self, request: CommandRequest, timeout: float, cancelled: threading.Event) -> AttemptResult:
        child = self._idle.get()
        if child is None or not child.process.is_alive():
            child = self._replace(child)
        try:
            child.conn.send(request.__dict__)
            answer = self._wait(child, timeout, cancelled)
        except (EOFError, OSError, BrokenPipeError) as exc:
            self._retire(child)
            self._refill()
            if self._closing:
                raise CommandInterrupted("module shutting down") from exc
            return AttemptResult(ResultCode.PROCESS_DIED, f"command process died: {exc or 'EOF'}")
        if isinstance(answer, AttemptResult):  # timed out or cancelled: the child is gone
            self._refill()
            return answer
        self._idle.put(child)
        adopt_spans(answer.pop("spans", None))
        return result_of(answer)

    def close(self) -> None:
        """Kill every child, including ones still running a command (shutdown past its grace)."""
        self._closing = True
        self._refills.put(False)
        with self._lock:
            children = list(self._all)
        for child in children:
            self._retire(child)
        with self._lock:
            refiller = self._refiller
        if refiller is not None and refiller is not threading.current_thread():
            refiller.join(timeout=10)  # it sees _closing (or the False) after the child it starts
        with self._lock:
            late = list(self._all)  # one the refiller started while the others were retired
        for child in late:
            self._retire(child)

    def _wait(self, child: _Child, timeout: float, cancelled: threading.Event) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._retire(child)
                return AttemptResult(ResultCode.TIMED_OUT, f"timed out after {timeout:g}s; stopped")
            if cancelled.is_set():
                self._retire(child)
                return AttemptResult(ResultCode.FAILED, "cancelled: the claim on this step was lost")
            if child.conn.poll(min(remaining, POLL_SLICE)):
                return child.conn.recv()

    def _spawn(self) -> _Child:
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(
            target=child_main,
            args=(self._registry_ref, child_end, self._fault_injection, *self._log, self._store_url),
            daemon=True,
            name=f"baton-command-{self._registry_ref}",
        )
        process.start()
        child_end.close()
        child = _Child(process, parent_end)
        with self._lock:
            self._all.add(child)
        if self._closing:  # close() ran while this one started (a refill): it must not outlive it
            self._retire(child)
        return child

    def _refill(self) -> None:
        """A child was lost (killed at a timeout, or it died): start its replacement now, off the
        step's path. The next command (a retry, typically) then finds a warm child instead of
        waiting for a new one's imports inside its own attempt (a second or more on a loaded
        machine, enough to push an attempt past its timeout). If the new child cannot start,
        the next run() tries again itself and reports it."""
        if self._closing:
            self._idle.put(None)
            return
        with self._lock:
            if self._refiller is None:
                # One thread for the runner's life, so replacements start one at a time. (Children
                # were spawned once, and died with the thread that started them, PR_SET_PDEATHSIG
                # following the thread; forked by the forkserver they no longer do.)
                self._refiller = threading.Thread(target=self._refill_loop, name="baton-command-refill", daemon=True)
                self._refiller.start()
        self._refills.put(True)

    def _refill_loop(self) -> None:
        while self._refills.get() and not self._closing:
            try:
                child = self._spawn()
                self._await_ready(child, timeout=60.0)
            except Exception as exc:
                log.warning("command process could not be started ahead; the next command will try", error=str(exc))
                self._idle.put(None)
                continue
            self._idle.put(child)

    def _replace(self, old: _Child | None) -> _Child:
        if old is not None:
            self._retire(old)
        child = self._spawn()
        self._await_ready(child, timeout=60.0)
        return child

    def _await_ready(self, child: _Child, timeout: float) -> None:
        """Wait for the child's "ready" (its imports are done); a child that cannot start is fatal."""
        if not child.conn.poll(timeout):
            self._retire(child)
            raise RuntimeError(f"command process for {self._registry_ref} not ready after {timeout:g}s")
        child.conn.recv()

    def _retire(self, child: _Child) -> None:
        child.kill()
        with self._lock:
            self._all.discard(child)


__all__ = ["MAX_MESSAGE", "CommandInterrupted", "CommandRequest", "CommandRunner", "bounded_message"]
