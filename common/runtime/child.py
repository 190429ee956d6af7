"""The child process that runs commands, so a timeout can really stop one.

Threads cannot be killed; a process can. Each worker slot of a module owns one long-lived child
that imports the module's registry once and runs one command at a time. On a timeout the parent
kills the child's whole process group (the command may have started programs of its own) and
starts a fresh child.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from common.engine.check_again import parse_answer
from common.errors import CommandFailed, StoreError
from common.input_limits import InputLimits, json_problems
from common.logging import configure_logging, hidden_values
from common.engine.document import Task
from common.store.factory import open_store
from common.store.port import TaskStore
from common.runtime.faults import BadFaultRule, faults_for
from common.runtime.registry import CommandContext, CommandRegistry, load_registry
from common.engine.states import Phase

PR_SET_PDEATHSIG = 1


def child_main(
    registry_ref: str,
    conn: Connection,
    fault_injection: bool,
    log_format: str = "console",
    log_level: str = "info",
    store_url: str | None = None,
) -> None:
    configure_logging(log_format, log_level)  # a command's log lines look like its module's
    os.setsid()  # own process group: the parent kills the command and whatever it started
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    registry = load_registry(registry_ref)
    resources = registry.make_resources()
    read_task = _task_reader(store_url)
    conn.send({"ready": True})  # imports done: the parent may count this slot as available
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(execute(registry, request, fault_injection, resources, read_task))


def _task_reader(store_url: str | None) -> Callable[[str], Task | None] | None:
    """The store, opened on first use (a command that never checks its fence never connects)."""
    if store_url is None:
        return None
    opened: list[TaskStore] = []

    def read(task_id: str) -> Task | None:
        if not opened:
            opened.append(open_store(store_url))
        try:
            return opened[0].get(task_id)
        except StoreError as exc:
            raise CommandFailed(f"cannot check the fencing token: {exc}") from None  # retryable

    return read


def execute(
    registry: CommandRegistry,
    request: dict[str, Any],
    fault_injection: bool,
    resources: Any = None,
    read_task: Callable[[str], Task | None] | None = None,
) -> dict[str, Any]:
    """Run one command; always answer with {"ok", "message", "output", "retryable"}, plus
    "check_again" (seconds; "message" is then its progress) when it is not done yet."""
    context = CommandContext(
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
        item=request.get("item"),
        item_index=request.get("item_index"),
    )
    with hidden_values(request.get("hidden", ())):  # a command's own log lines hide the secrets too
        return _run(registry, context, fault_injection)


def _run(registry: CommandRegistry, context: CommandContext, fault_injection: bool) -> dict[str, Any]:
    try:
        if fault_injection:
            _injected_fault(context)
        output = registry.get(context.command)(context) or {}
        if not isinstance(output, dict):
            raise CommandFailed(f"command returned {type(output).__name__}, not a dict", retryable=False)
        answer = parse_answer(output)
        if isinstance(answer, str):
            raise CommandFailed(answer, retryable=False)
        if answer is not None:  # not done yet: nothing to merge, ask again later
            seconds, progress = answer
            return {"ok": True, "message": progress, "output": {}, "retryable": True, "check_again": seconds}
        # It goes into the task's Parameters: the same limits as a client's parameters, so no
        # command can store what a reader, the sweeper or another store could not handle.
        problems = json_problems(output, InputLimits(), "output")
        if problems:
            raise CommandFailed("; ".join(f"{path}: {message}" for path, message in problems), retryable=False)
        return {"ok": True, "message": "", "output": output, "retryable": True}
    except CommandFailed as exc:
        return {"ok": False, "message": str(exc), "output": {}, "retryable": exc.retryable}
    except Exception as exc:  # a command's bug fails its attempt, never the module
        last = traceback.extract_tb(exc.__traceback__)[-1]
        where = f" at {os.path.basename(last.filename)}:{last.lineno}"
        return {"ok": False, "message": f"{type(exc).__name__}: {exc}{where}", "output": {}, "retryable": True}


def _injected_fault(context: CommandContext) -> None:
    try:
        faults = faults_for(context.parameters, context.command, context.phase, context.attempt)
    except BadFaultRule as exc:
        raise CommandFailed(str(exc), retryable=False) from None
    for fault in faults:
        if fault.action == "hang":
            while True:
                time.sleep(3600)
        if fault.action == "fail":
            raise CommandFailed(f"injected failure in {context.command}", retryable=fault.retryable)


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this child when its parent dies (kill -9 included). The parent is the
    runner's forkserver (runner.py), which exits as soon as its module process dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(0)
