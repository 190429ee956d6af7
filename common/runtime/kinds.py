"""The three kinds of command (docs/design/runtime.md) and how each runs, times out and is stopped.

Each kind's `start` returns at once (a process command's once its child answered); the
attempt's end is reported once through `done`: an
AttemptResult, or None when shutdown stopped the command (the step is then released, not failed).
Whichever comes first wins: the command's answer, its timeout, a lost lease, shutdown.

- process: a child forked from the forkserver (runner.py), waited for on the store thread that
  claimed it (one store thread per process slot is kept for that).
- thread: a thread of its own; at its timeout (or a lost lease) the attempt ends at once and the
  thread is abandoned, its late side effects refused by the fence. A thread cannot be killed: one
  still running well past that is stuck, counted by `stuck()` (the module exits past a limit).
- async: a task on the one event-loop thread; its timeout and a lost lease cancel it.

Every command runs in a copy of the contextvars of the store thread that claimed it: the log
context (task id, step, phase, attempt) and the secret values to mask (common.secrets.log_lines)
follow it into its thread or asyncio task.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from common.handoff import HandOff
from common.runtime.invoke import CommandRequest, call_async, call_sync, command_context, result_of
from common.runtime.lease import Lease
from common.runtime.offload import DaemonThreadPool
from common.runtime.registry import CommandRegistry
from common.runtime.runner import CommandInterrupted, CommandRunner
from common.engine.states import ResultCode
from common.engine.changes import AttemptResult

Done = Callable[[AttemptResult | None], None]
LOST = "cancelled: the claim on this step was lost"
STUCK_GRACE_SECONDS = 5.0  # an abandoned thread still running this long after is stuck


def timed_out(timeout: float) -> AttemptResult:
    return AttemptResult(ResultCode.TIMED_OUT, f"timed out after {timeout:g}s; stopped")


class _Once:
    """Reports an attempt's end once, whoever gets there first."""

    def __init__(self, done: Done):
        self._done = done
        self._lock = threading.Lock()
        self._finished = False

    def __call__(self, outcome: AttemptResult | None) -> bool:
        with self._lock:
            if self._finished:
                return False
            self._finished = True
        self._done(outcome)
        return True


class Reactor:
    """The module's one event-loop thread: async commands, and the timers of thread commands.
    Blocking calls an async command hands off (`run_in_executor(None, ...)`,
    `ctx.check_fence_async`) go to a pool of their own (offload.py), as large as asyncio's
    default: never to the store threads, which a few slow calls would take from every claim and
    commit."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._offload = DaemonThreadPool(min(32, (os.cpu_count() or 1) + 4))
        self.loop.set_default_executor(self._offload)
        self._handed: HandOff[Callable[[], Any]] = HandOff()  # call_soon's, for the loop thread
        self._thread = threading.Thread(target=self.loop.run_forever, name="baton-event-loop", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def call_soon(self, fn: Callable[[], Any]) -> None:
        """Run `fn` on the loop thread, in the order given, one wake-up of the loop per batch
        (common.handoff): with hundreds of commands starting, one per command was a system call
        and a thread switch each."""
        if self._handed.put(fn):
            self.loop.call_soon_threadsafe(self._run_handed)

    def call_later(self, delay: float, fn: Callable[[], Any]) -> None:
        self.call_soon(lambda: self.loop.call_later(delay, fn))

    def _run_handed(self) -> None:
        for fn in self._handed.take():
            try:
                fn()
            except Exception as exc:  # as the loop's own handler would: the others still run
                self.loop.call_exception_handler({"message": "reactor callback failed", "exception": exc})

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        self._offload.shutdown(wait=False, cancel_futures=True)  # a hung hand-off holds no exit (offload.py)


class ProcessKind:
    """Runs on the calling store thread until the child answered: the dispatcher's pool has a
    store thread per process slot beside its own, so this wait never starves the store work,
    and a process command's step takes no more thread hand-overs than before the kinds."""

    def __init__(self, runner: CommandRunner):
        self._runner = runner

    def start(self, request: CommandRequest, timeout: float, lease: Lease, context: contextvars.Context,
              done: Done) -> None:  # fmt: skip
        context.run(self._run, request, timeout, lease, done)

    def _run(self, request: CommandRequest, timeout: float, lease: Lease, done: Done) -> None:
        try:
            result = self._runner.run(request, timeout, lease.lost)
        except CommandInterrupted:
            done(None)
            return
        except Exception as exc:  # no child could be started: the attempt fails, the module lives
            done(AttemptResult(ResultCode.PROCESS_DIED, f"command process failed: {exc}"))
            return
        done(result)

    def interrupt_all(self) -> None:
        self._runner.close()

    def close(self) -> None:
        self._runner.close()


class _ThreadRun:
    def __init__(self, once: _Once):
        self.once = once
        self.thread: threading.Thread | None = None


class _InProcessKind:
    """What a kind that runs commands in the module process itself holds: the registry, the
    fault-injection switch, where outcomes go, the process's resources and the fence's reader."""

    def __init__(self, registry: CommandRegistry, fault_injection: bool, reactor: Reactor,
                 resources: Callable[[], Any], read_task: Callable[[str], Any],
                 read_item: Callable[..., Any] | None = None):  # fmt: skip
        self._registry = registry
        self._fault_injection = fault_injection
        self._reactor = reactor
        self._resources = resources
        self._read_task = read_task
        self._read_item = read_item


class ThreadKind(_InProcessKind):
    def __init__(self, registry: CommandRegistry, fault_injection: bool, reactor: Reactor,
                 resources: Callable[[], Any], read_task: Callable[[str], Any],
                 read_item: Callable[..., Any] | None = None):  # fmt: skip
        super().__init__(registry, fault_injection, reactor, resources, read_task, read_item)
        self._lock = threading.Lock()
        self._running: set[_ThreadRun] = set()
        self._abandoned: dict[_ThreadRun, float] = {}  # -> when (monotonic) its attempt ended without it

    def start(self, request: CommandRequest, timeout: float, lease: Lease, context: contextvars.Context,
              done: Done) -> None:  # fmt: skip
        run = _ThreadRun(_Once(done))
        run.thread = threading.Thread(
            target=context.run, args=(self._body, run, request), name=f"baton-thread-{request.command}", daemon=True
        )
        with self._lock:
            self._running.add(run)
        self._reactor.call_later(timeout, lambda: self._abandon(run, timed_out(timeout)))
        lease.on_lost(lambda: self._abandon(run, AttemptResult(ResultCode.FAILED, LOST)))
        run.thread.start()

    def _body(self, run: _ThreadRun, request: CommandRequest) -> None:
        try:
            context = command_context(self._registry, request.__dict__, self._resources(), self._read_task,
                                      self._read_item)
            answer = call_sync(self._registry, context, self._fault_injection, in_module=True, verify=request.verify)
        finally:
            with self._lock:
                self._running.discard(run)
                self._abandoned.pop(run, None)
        run.once(result_of(answer))

    def _abandon(self, run: _ThreadRun, outcome: AttemptResult | None) -> None:
        if run.once(outcome):
            with self._lock:
                if run in self._running:
                    self._abandoned[run] = time.monotonic()

    def stuck(self) -> int:
        """Threads still running STUCK_GRACE_SECONDS after their attempt ended without them."""
        cutoff = time.monotonic() - STUCK_GRACE_SECONDS
        with self._lock:
            return sum(1 for since in self._abandoned.values() if since < cutoff)

    def interrupt_all(self) -> None:
        with self._lock:
            running = list(self._running)
        for run in running:
            self._abandon(run, None)

    def close(self) -> None:
        pass


class _AsyncRun:
    def __init__(self, once: _Once):
        self.once = once
        self.task: asyncio.Task[None] | None = None
        self.stopping = False  # cancelled by shutdown: released, not failed

    def cancel(self, shutdown: bool = False) -> None:  # on the loop thread
        self.stopping = self.stopping or shutdown
        if self.task is not None:
            self.task.cancel()


class AsyncKind(_InProcessKind):
    def __init__(self, registry: CommandRegistry, fault_injection: bool, reactor: Reactor,
                 resources: Callable[[], Any], read_task: Callable[[str], Any],
                 read_item: Callable[..., Any] | None = None):  # fmt: skip
        super().__init__(registry, fault_injection, reactor, resources, read_task, read_item)
        self._running: set[_AsyncRun] = set()  # touched on the loop thread only
        self._closing = False

    def start(self, request: CommandRequest, timeout: float, lease: Lease, context: contextvars.Context,
              done: Done) -> None:  # fmt: skip
        run = _AsyncRun(_Once(done))
        # The context is copied before the loop thread sees it: the task runs in a context of
        # its own, which no other thread enters.
        self._reactor.call_soon(lambda: self._begin(run, request, timeout, lease, context))
        lease.on_lost(lambda: self._reactor.call_soon(run.cancel))

    def _begin(self, run: _AsyncRun, request: CommandRequest, timeout: float, lease: Lease,
               context: contextvars.Context) -> None:  # fmt: skip
        if self._closing:  # shutdown got here first: never started, released
            run.once(None)
            return
        self._running.add(run)
        run.task = self._reactor.loop.create_task(self._run(run, request, timeout), context=context)
        if lease.lost.is_set():  # lost before the task existed to be cancelled
            run.cancel()

    async def _run(self, run: _AsyncRun, request: CommandRequest, timeout: float) -> None:
        deadline = asyncio.timeout(timeout)
        try:
            context = command_context(self._registry, request.__dict__, self._resources(), self._read_task,
                                      self._read_item)
            async with deadline:
                answer = await call_async(self._registry, context, self._fault_injection, request.verify)
        except TimeoutError:  # the deadline's: call_async turns a command's own errors into answers
            run.once(timed_out(timeout))
            return
        except asyncio.CancelledError:
            run.once(None if run.stopping else AttemptResult(ResultCode.FAILED, LOST))
            raise
        finally:
            self._running.discard(run)
        # A command that swallowed its cancellation still timed out.
        run.once(timed_out(timeout) if deadline.expired() else result_of(answer))

    def interrupt_all(self) -> None:
        def cancel_all() -> None:
            self._closing = True
            for run in list(self._running):
                run.cancel(shutdown=True)

        self._reactor.call_soon(cancel_all)

    def close(self) -> None:
        pass
