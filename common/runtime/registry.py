"""Where a module declares the commands it serves.

    registry = CommandRegistry("mysql")

    @registry.command("init_instance")
    def init_instance(ctx: CommandContext) -> dict:
        ...

A command receives the task's shared Parameters (plus `item` and `item_index` in a for_each step's
runs) and the unit's idempotency key, and returns a
dict merged into Parameters. What commands share for the life of their process (a database
connection pool, a store handle) comes from a setup function, run once in each command process:

    @registry.setup
    def connect() -> Resources:
        return Resources(db=connect_to_mysql(load_settings()))

and reaches each command as `ctx.resources`. It reports a failure it understands by raising CommandFailed; any
other exception fails the attempt as well. Commands run at least once: use the idempotency key so
that running twice has no double effect.

A command runs as one of three kinds (docs/design/runtime.md): `process` (a `def`, the default:
in a child process, which a timeout kills), `thread` (`@registry.command(kind="thread")`: in a
thread of the module process) or `async` (an `async def`: a coroutine on the module's event
loop, cancelled at its timeout). In-process kinds share the module's setup resources.

A command that starts work in another system which calls back when done hands that system a
token and waits for it, parked, holding no slot (docs/guide/callbacks.md):

    token = ctx.callback_token()
    tickets.open(summary=..., callback=token)
    return ctx.await_callback(timeout=4 * 3600, heartbeat=600)

A command may also outlive its claim (its process froze past the lease; see common/engine/core/fence.py):
before a side effect that a rollback may undo, call `ctx.check_fence()`, under the same lock or
transaction the undo takes. An async command awaits `ctx.check_fence_async()` instead.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from common.engine.commands import (
    FencingToken, ReadItem, await_callback, check_fence, item_record_of, new_token, rollback_reached, token_hash,
)
from common.errors import CommandFailed
from common.secrets.log_lines import hide_too
from common.engine.document import Task
from common.engine.states import Phase
from common.runtime.verify import Verdict, VerifyFn

__all__ = ["CommandContext", "CommandRegistry", "Verdict"]


@dataclass(frozen=True)
class CommandContext:
    task_id: str
    task_type: str
    module: str
    command: str
    cursor: int
    phase: Phase
    attempt: int
    idempotency_key: str  # same for every attempt and redelivery of this step phase
    parameters: Mapping[str, Any]
    resources: Any = None  # what the registry's setup function returned, in this process
    # Names this run of the task, the same for all its steps (e.g. a resource claim held from
    # check to deduct). A task an operator restarted gets a new one.
    run_key: str = ""
    # The fencing token: this attempt's dispatch id and the worker that claimed it.
    dispatch_id: str = ""
    owner: str = ""
    # Reads the task from the store (in the command's own process); None where there is no store.
    read_task: Callable[[str], Task | None] | None = None
    # Reads an item's record (a step over item records keeps each item's run there).
    read_item: ReadItem | None = None
    # Writes a callback token's hash on this run (task id, dispatch id, owner, hash); None where
    # there is no store.
    open_callback: Callable[[str, str, str, str], None] | None = None
    _token: list[str] = field(default_factory=list, repr=False)  # the token given out, once asked
    # Two threads of one attempt may ask at once (an async command gathering two
    # callback_token_async, which run on executor threads): the second waits for the first's
    # token instead of registering its own, which the store refuses (the run has one already).
    _token_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def callback_token(self) -> str:
        """A token for another system to call back with (`POST /api/v1/callbacks/{token}`),
        registered on this attempt before it is returned: give it out, then return
        `ctx.await_callback(...)`. The same token for every call in one attempt. Treat it as a
        secret: it is the other system's only credential. Raises CommandFailed for an item of a
        for_each step, or when this attempt lost its claim."""
        with self._token_lock:
            if self._token:
                return self._token[0]
            if self.open_callback is None:
                raise RuntimeError("this command runs without a store: it cannot wait for a callback")
            if self.item_index is not None:
                raise CommandFailed("an item of a for_each step may not wait for a callback", retryable=False)
            token = new_token(self.task_id)
            self.open_callback(self.task_id, self.dispatch_id, self.owner, token_hash(token))
            self._token.append(token)
        hide_too(token)  # a log line of the command that quotes it shows it masked
        return token

    async def callback_token_async(self) -> str:
        """callback_token for an async command: the write runs off the event loop."""
        token = await asyncio.get_running_loop().run_in_executor(None, self.callback_token)
        hide_too(token)  # in the coroutine's own context (the executor's thread has another)
        return token

    def await_callback(self, timeout: float, heartbeat: float | None = None) -> dict[str, Any]:
        """The answer that parks the step until the token's callback (or `timeout` seconds; or
        `heartbeat` seconds without a heartbeat): return it. Raises CommandFailed when no token
        was asked for (nobody could call back)."""
        if not self._token:
            raise CommandFailed("await_callback without a token: call ctx.callback_token() and give it out first",
                                retryable=False)
        return await_callback(timeout, heartbeat)

    @property
    def fencing_token(self) -> FencingToken:
        return FencingToken(self.task_id, self.cursor, self.phase, self.attempt, self.dispatch_id, self.owner,
                            self.item_index)

    def check_fence(self) -> None:
        """Raise StaleFence (a CommandFailed) unless this attempt is still its task's current run,
        RUNNING under this worker. Call it right before a side effect, under the lock the undo takes."""
        if self.read_task is None:
            raise RuntimeError("this command runs without a store: its fence cannot be checked")
        check_fence(self.read_task, self.fencing_token, self.read_item)

    async def check_fence_async(self) -> None:
        """check_fence for an async command: the read runs off the event loop (on a store thread),
        so the other commands on the loop keep running meanwhile."""
        await asyncio.get_running_loop().run_in_executor(None, self.check_fence)

    def rollback_reached(self) -> bool:
        """True once this step's rollback has begun (or the task ended without success). For an
        effect that cannot be fenced under a lock: make it, then ask this; if True, undo it
        yourself (the rollback may have run before the effect, and found nothing to undo)."""
        if self.read_task is None:
            raise RuntimeError("this command runs without a store: its fence cannot be checked")
        task = self.read_task(self.task_id)
        record = item_record_of(task, self.cursor, self.item_index, self.read_item)
        return rollback_reached(task, self.cursor, self.item_index, record)
    # A for_each step's run: its item and the item's index (None for a plain step). They are
    # also in `parameters` as "item" and "item_index".
    item: Any = None
    item_index: int | None = None


CommandFn = Callable[[CommandContext], Any]  # returns a dict (or None); an async def a coroutine of one
KINDS = ("process", "thread", "async")


class CommandRegistry:
    def __init__(self, module: str, version: str | None = None):
        self.module = module
        self.version = version  # announced with the module; None: baton's own version
        self._commands: dict[str, CommandFn] = {}
        self._kinds: dict[str, str] = {}
        self._setup: Callable[[], Any] | None = None
        self._verifies: dict[str, VerifyFn] = {}

    def command(self, name: str | None = None, *, kind: str | None = None) -> Callable[[CommandFn], CommandFn]:
        """Register a command. `kind`: "process" (the default for a def) or "thread"; an
        `async def` is "async" by itself."""

        def register(fn: CommandFn) -> CommandFn:
            command_name = name or fn.__name__
            if command_name in self._commands:
                raise ValueError(f"{self.module}: command {command_name!r} registered twice")
            self._kinds[command_name] = command_kind(f"{self.module}.{command_name}", fn, kind)
            self._commands[command_name] = fn
            return fn

        return register

    def verify(self, name: str) -> Callable[[VerifyFn], VerifyFn]:
        """Register the verify companion of command `name`: a function (parameters, ctx)
        answering a Verdict (common/runtime/verify.py), run before a retry or a rollback of an
        attempt whose outcome is unknown. It only looks: it must change nothing."""

        def register(fn: VerifyFn) -> VerifyFn:
            if name in self._verifies:
                raise ValueError(f"{self.module}: verify of {name!r} registered twice")
            self._verifies[name] = fn
            return fn

        return register

    def verifier(self, name: str) -> VerifyFn | None:
        """The verify of command `name`, None when it declares none."""
        return self._verifies.get(name)

    def setup(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """Register the function that builds this module's shared resources (once per process)."""
        if self._setup is not None:
            raise ValueError(f"{self.module}: setup registered twice")
        self._setup = fn
        return fn

    def make_resources(self) -> Any:
        return self._setup() if self._setup else None

    def get(self, name: str) -> CommandFn:
        try:
            return self._commands[name]
        except KeyError:
            raise KeyError(f"module {self.module!r} has no command {name!r}") from None

    def names(self) -> frozenset[str]:
        return frozenset(self._commands)

    def kind(self, name: str) -> str:
        """The kind that runs `name`; an unknown command is left to a process (its child
        reports it as the attempt's failure, as it always did)."""
        return self._kinds.get(name, "process")

    def kinds(self) -> dict[str, str]:
        """Each command's kind, by name."""
        return dict(sorted(self._kinds.items()))


def command_kind(where: str, fn: Callable[..., Any], declared: str | None) -> str:
    """The kind of a command function: an `async def` is async; a def is what it declares."""
    if declared is not None and declared not in KINDS:
        raise ValueError(f"{where}: kind must be one of {', '.join(KINDS)}, not {declared!r}")
    if inspect.iscoroutinefunction(fn):
        if declared not in (None, "async"):
            raise ValueError(f"{where}: an async def runs as kind async, not {declared!r}")
        return "async"
    if declared == "async":
        raise ValueError(f"{where}: kind async needs an async def")
    return declared or "process"


def registry_module(ref: str) -> str:
    """The module a "package.module:attribute" reference names."""
    return ref.partition(":")[0]


def load_registry(ref: str) -> CommandRegistry:
    """Import "package.module:attribute". The command runner's child processes find it this way."""
    attribute = ref.partition(":")[2]
    registry = getattr(importlib.import_module(registry_module(ref)), attribute or "registry")
    if not isinstance(registry, CommandRegistry):
        raise TypeError(f"{ref} is a {type(registry).__name__}, not a CommandRegistry")
    return registry
