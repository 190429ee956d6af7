"""Hands each delivery to its command's kind once a slot of that kind is free, and runs the store
work (claims and outcome commits) on a small pool of store threads, so no thread waits
out a command's length except a process command's (a store thread kept per process slot) and a
thread command's own.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

import structlog

from common.logging import exception_summary
from common.runtime.inbox import TrackedDelivery
from common.runtime.invoke import CommandRequest, item_reader, store_reader
from common.runtime.kinds import AsyncKind, Done, ProcessKind, Reactor, ThreadKind
from common.runtime.lease import Lease
from common.runtime.registry import KINDS, CommandRegistry
from common.runtime.runner import CommandRunner
from common.runtime.slots import Slots, Start
from common.runtime.store_pool import StorePool
from common.runtime.waiting_line import overtake_after
from common.settings import Settings
from common.store.items.port import ItemStore
from common.store.tasks.port import TaskStore
from common.engine.changes import AttemptResult

log = structlog.get_logger(__name__)


class Dispatcher:
    def __init__(self, registry: CommandRegistry, registry_ref: str, settings: Settings, store: TaskStore,
                 items: ItemStore | None = None):
        self._registry = registry
        # Only the kinds this module's commands use: a module of async and thread commands
        # starts no forkserver and no children.
        self.kinds_used = sorted(set(registry.kinds().values()) or {"process"}, key=KINDS.index)
        self.slots = Slots({kind: settings.slots(kind) for kind in self.kinds_used},
                           overtake_after(settings.hold_limit_seconds))
        self.prefetch = settings.prefetch or sum(settings.slots(kind) for kind in self.kinds_used)
        self.stopping = threading.Event()
        self.on_slot_freed: Callable[[], None] = lambda: None
        # A process command waits for its child on the store thread that claimed it: one more
        # store thread per process slot, so the claims and commits of the other kinds never wait.
        process_slots = settings.effective_process_slots if "process" in self.kinds_used else 0
        self._store_pool = StorePool(settings.effective_store_threads + process_slots)
        self._kinds: dict[str, ProcessKind | ThreadKind | AsyncKind] = {}
        self._reactor: Reactor | None = None
        self._runner: CommandRunner | None = None
        if "process" in self.kinds_used:
            self._runner = CommandRunner(
                registry_ref, settings.effective_process_slots, settings.fault_injection, settings.log_format,
                settings.log_level, store_url=settings.store_url,
            )  # fmt: skip
            self._kinds["process"] = ProcessKind(self._runner)
        if {"thread", "async"} & set(self.kinds_used):
            self._reactor = Reactor()
            resources = _once(registry.make_resources)
            read_task = store_reader(lambda: store)
            read_item = item_reader(lambda: items) if items is not None else None
            self._kinds["thread"] = ThreadKind(registry, settings.fault_injection, self._reactor, resources, read_task,
                                               read_item)
            self._kinds["async"] = AsyncKind(registry, settings.fault_injection, self._reactor, resources, read_task,
                                             read_item)

    def start(self) -> None:
        if self._runner is not None:
            self._runner.start()
        if self._reactor is not None:
            self._reactor.start()

    def verifies(self, command: str) -> bool:
        """Whether the registry declares a verify for `command` (docs/design/runtime.md, "Verifying
        an unknown outcome")."""
        return self._registry.verifier(command) is not None

    def kind_of(self, command: str) -> str:
        kind = self._registry.kind(command)
        # An unknown command goes to a kind this module runs, whose call reports it as a failure.
        return kind if kind in self._kinds else self.kinds_used[0]

    def admit(self, kind: str, delivery: TrackedDelivery, start: Start) -> bool:
        return self.slots.admit(kind, delivery, start)

    def release(self, kind: str) -> None:
        """A command of `kind` ended and its outcome is committed: its slot goes to the next
        parked delivery of that kind (given back instead while stopping)."""
        while (parked := self.slots.release(kind)) is not None:
            if not self.stopping.is_set():
                self.submit(parked.start)
                break
            parked.delivery.requeue()
        self.on_slot_freed()

    def start_command(self, request: CommandRequest, timeout: float, lease: Lease, context: contextvars.Context,
                      finish: Done) -> None:  # fmt: skip
        """Start the command; `finish` (the commit) runs once it ended. A process command ends on
        the store thread that started it, which commits too; the other kinds end on threads that
        must not block (the event loop, a timer, an abandoned command's): their commit goes to a
        store thread."""
        kind = self.kind_of(request.command)
        if kind == "process":
            def done(outcome: AttemptResult | None) -> None:
                _logged(lambda: finish(outcome))
        else:
            def done(outcome: AttemptResult | None) -> None:
                self.submit(lambda: finish(outcome), commit=True)
        self._kinds[kind].start(request, timeout, lease, context, done)

    def submit(self, job: Callable[[], Any], *, commit: bool = False) -> None:
        """Run `job` on a store thread; a commit goes ahead of the claims waiting (store_pool.py).
        A failing job is logged (type and place only: its message may quote a task's secrets),
        never lost silently."""
        try:
            self._store_pool.submit(lambda: _logged(job), commit=commit)
        except RuntimeError:  # the pool is shut: the module is past its stop
            log.warning("store work dropped after stop")

    def stuck_threads(self) -> int:
        thread_kind = self._kinds.get("thread")
        return thread_kind.stuck() if isinstance(thread_kind, ThreadKind) else 0

    def interrupt_all(self) -> None:
        """Stop every running command (shutdown past its grace): each is released."""
        for kind in self._kinds.values():
            kind.interrupt_all()

    def close(self) -> None:
        for kind in self._kinds.values():
            kind.close()
        if self._reactor is not None:
            self._reactor.stop()
        self._store_pool.shutdown()


def _logged(job: Callable[[], Any]) -> None:
    try:
        job()
    except Exception as exc:
        log.error("store work failed", error=type(exc).__name__, where=exception_summary(exc))


def _once(make: Callable[[], Any]) -> Callable[[], Any]:
    """The registry's setup, run once in this process on first use, shared by its in-process commands."""
    made: list[Any] = []
    lock = threading.Lock()

    def get() -> Any:
        with lock:
            if not made:
                made.append(make())
            return made[0]

    return get
