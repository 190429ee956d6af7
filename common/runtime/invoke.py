"""Calling one command, the same for every kind (process, thread, async): its context from the
request, fault injection, and its answer (output, check again, or failure) as a plain dict that
crosses a pipe from a child as well as a thread or the event loop.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.engine.commands import ReadItem, open_callback, parse_answer, parse_await
from common.errors import CommandFailed, StoreError
from common.input_limits import InputLimits, json_problems, printable
from common.engine.document import ItemRecord, Task
from common.store.items.port import ItemStore
from common.runtime.faults import BadFaultRule, faults_for
from common.runtime.registry import CommandContext, CommandRegistry
from common.runtime.verify import VerifyPlan, marked, run_first_async, run_first_sync, settle
from common.engine.states import Phase, ResultCode
from common.store.tasks.port import TaskStore
from common.engine.changes import AttemptResult, Refusal

# {"ok", "message", "output", "retryable"} plus "check_again" when not done, "verified" and
# "verify_reason" after a verify, "code" when a failure is not FAILED (an outcome left unknown).
Answer = dict[str, Any]
MAX_MESSAGE = 2000  # characters of a command's failure message kept in the task document


@dataclass
class CommandRequest:
    task_id: str
    task_type: str
    command: str
    cursor: int
    phase: int
    attempt: int
    idempotency_key: str
    run_key: str
    parameters: dict[str, Any] = field(default_factory=dict)
    dispatch_id: str = ""  # with owner: the fencing token (common/engine/core/fence.py)
    owner: str = ""
    # The task's secret values: masked in every log line the command writes, whatever its kind.
    hidden: list[str] = field(default_factory=list)
    item: Any = None  # a for_each step's item (also in parameters as `item`)
    item_index: int | None = None
    verify: VerifyPlan | None = None  # verify an unknown outcome first (common/runtime/verify.py)
    trace: str | None = None  # the command span's traceparent: a command process's spans join it


def bounded_message(message: str) -> str:
    """A failure message is stored on the step, in TaskMessage and in the history of every
    attempt: unbounded, one chatty command could grow a document past what a store takes."""
    message = printable(message)
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


def result_of(answer: Answer) -> AttemptResult:
    verified = answer.get("verified")
    return AttemptResult(
        ResultCode.OK if answer["ok"] else ResultCode(answer.get("code", ResultCode.FAILED)),
        bounded_message(answer["message"]),
        answer["output"],
        answer["retryable"],
        answer.get("check_again"),
        (verified, bounded_message(answer.get("verify_reason", ""))) if verified else None,
        tuple(answer["await_callback"]) if answer.get("await_callback") else None,  # type: ignore[arg-type]
    )


def command_context(
    registry: CommandRegistry,
    request: dict[str, Any],
    resources: Any = None,
    read_task: Callable[[str], Task | None] | None = None,
    read_item: ReadItem | None = None,
) -> CommandContext:
    return CommandContext(
        task_id=request["task_id"],
        task_type=request["task_type"],
        module=registry.module,
        command=request["command"],
        cursor=request["cursor"],
        phase=Phase(request["phase"]),
        attempt=request["attempt"],
        idempotency_key=request["idempotency_key"],
        parameters=request["parameters"],
        resources=resources,
        run_key=request["run_key"],
        dispatch_id=request.get("dispatch_id", ""),
        owner=request.get("owner", ""),
        read_task=read_task,
        read_item=read_item,
        open_callback=getattr(read_task, "open_callback", None),  # a store reader's (store_reader)
        item=request.get("item"),
        item_index=request.get("item_index"),
    )


def store_reader(get_store: Callable[[], TaskStore]) -> Callable[[str], Task | None]:
    """ctx.read_task over a store: an outage fails the attempt (retryable), naming the fence.
    It carries `open_callback`, ctx.callback_token()'s write over the same store, so every place
    that builds a command's context from a reader gets it too."""

    def read(task_id: str) -> Task | None:
        try:
            return get_store().get(task_id)
        except StoreError as exc:
            raise CommandFailed(f"cannot check the fencing token: {exc}") from None

    def open_on(task_id: str, dispatch_id: str, owner: str, hashed: str) -> None:
        """The token's hash on the command's run (docs/design/callbacks.md), or CommandFailed."""
        from common.store.tasks.mutate import mutate  # the store's write loop: only a command that asks

        try:
            written = mutate(get_store(), task_id, lambda task: open_callback(task, dispatch_id, owner, hashed))
        except StoreError as exc:
            raise CommandFailed(f"cannot register the callback token: {exc}") from None
        if isinstance(written, Refusal):
            raise CommandFailed(f"cannot wait for a callback: {written.reason}", retryable=False)

    read.open_callback = open_on  # type: ignore[attr-defined]
    return read


def item_reader(get_items: Callable[[], ItemStore]) -> ReadItem:
    """ctx.read_item over the item records beside a store, failing as store_reader does."""

    def read(task_id: str, generation: int, cursor: int, item: int) -> ItemRecord | None:
        try:
            return get_items().get_item(task_id, generation, cursor, item)
        except StoreError as exc:
            raise CommandFailed(f"cannot check the fencing token: {exc}") from None

    return read


def call_sync(registry: CommandRegistry, context: CommandContext, fault_injection: bool,
              in_module: bool = False, verify: VerifyPlan | None = None) -> Answer:  # fmt: skip
    """Run a def command (in a child process, or a thread of the module: `in_module`) to its
    answer, its verify first when `verify` asks (its verdict may answer instead); never raises."""
    verdict = None
    try:
        if fault_injection:
            _injected_fault(context, hang=_hang_blocking, in_module=in_module)
        fn = registry.verifier(verify.command) if verify is not None else None
        if verify is not None and fn is not None:
            verdict = run_first_sync(fn, context, verify)
            settled = settle(verify, verdict)
            if settled is not None:
                return settled
        return marked(answer_of(registry.get(context.command)(context)), verdict)
    except Exception as exc:  # a command's bug fails its attempt, never the module
        return marked(failure_of(exc), verdict)


async def call_async(registry: CommandRegistry, context: CommandContext, fault_injection: bool,
                     verify: VerifyPlan | None = None) -> Answer:  # fmt: skip
    """Await an async command to its answer (its verify first, as call_sync). Cancellation (its
    timeout, a lost lease, shutdown) is not caught: the caller decides what it means."""
    verdict = None
    try:
        if fault_injection and _injected_fault(context, hang=None, in_module=True):
            await asyncio.sleep(float("inf"))  # an injected hang: until cancelled
        fn = registry.verifier(verify.command) if verify is not None else None
        if verify is not None and fn is not None:
            verdict = await run_first_async(fn, context, verify)
            settled = settle(verify, verdict)
            if settled is not None:
                return settled
        return marked(answer_of(await registry.get(context.command)(context)), verdict)
    except Exception as exc:
        return marked(failure_of(exc), verdict)


def answer_of(output: Any) -> Answer:
    output = {} if output is None else output
    if not isinstance(output, dict):
        return failure_of(CommandFailed(f"command returned {type(output).__name__}, not a dict", retryable=False))
    awaited = parse_await(output)
    if isinstance(awaited, str):
        return failure_of(CommandFailed(awaited, retryable=False))
    if awaited is not None:  # wait, parked, for the callback of the token it gave out
        return {"ok": True, "message": "", "output": {}, "retryable": True, "await_callback": list(awaited)}
    answer = parse_answer(output)
    if isinstance(answer, str):
        return failure_of(CommandFailed(answer, retryable=False))
    if answer is not None:  # not done yet: nothing to merge, ask again later
        seconds, progress = answer
        return {"ok": True, "message": progress, "output": {}, "retryable": True, "check_again": seconds}
    # It goes into the task's Parameters: the same limits as a client's parameters, so no
    # command can store what a reader, the sweeper or another store could not handle.
    problems = json_problems(output, InputLimits(), "output")
    if problems:
        message = "; ".join(f"{path}: {problem}" for path, problem in problems)
        return failure_of(CommandFailed(message, retryable=False))
    return {"ok": True, "message": "", "output": output, "retryable": True}


def failure_of(exc: Exception) -> Answer:
    if isinstance(exc, CommandFailed):
        return {"ok": False, "message": str(exc), "output": {}, "retryable": exc.retryable}
    last = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {os.path.basename(last.filename)}:{last.lineno}" if last else ""
    return {"ok": False, "message": f"{type(exc).__name__}: {exc}{where}", "output": {}, "retryable": True}


def _hang_blocking() -> None:
    while True:
        time.sleep(3600)


def _injected_fault(context: CommandContext, hang: Callable[[], None] | None, in_module: bool) -> bool:
    """Apply the task's injected faults: raise for a failure; for a hang, block in `hang` (a
    thread's hang blocks it for good, as a hung call would: its timeout ends the attempt and the
    thread stays stuck), or (None) answer True so an async caller awaits forever instead of
    blocking its loop. A crash `during_command` of a command running in the module process (a
    thread or async one) kills the module from inside the command: the command is surely in
    flight, however short (a process command's crash is the module's timer, step_handler.py)."""
    try:
        faults = faults_for(context.parameters, context.command, context.phase, context.attempt)
    except BadFaultRule as exc:
        raise CommandFailed(str(exc), retryable=False) from None
    for fault in faults:
        if fault.action == "hang":
            if hang is None:
                return True
            hang()
        if fault.action == "crash" and fault.at == "during_command" and in_module:
            os.kill(os.getpid(), signal.SIGKILL)
        if fault.action == "fail":
            raise CommandFailed(f"injected failure in {context.command}", retryable=fault.retryable)
    return False
