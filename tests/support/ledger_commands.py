"""Commands whose side effects can be counted, for the end-to-end tests of steps over item
records (tests/e2e/test_fan_out_records.py), served by a real module process.

Every call appends a line to the file BATON_TEST_LEDGER names (one write with O_APPEND: lines of
concurrent processes never interleave): what ran, for which unit, when. The effect itself is
kept once per idempotency key, as a real module keeps it (a file created with O_EXCL in the
directory BATON_TEST_EFFECTS names): a command run twice (its module killed after the effect,
before the commit) leaves one effect, and the ledger still shows both runs."""

import json
import os
import subprocess
import time

from common.runtime.registry import CommandContext, CommandRegistry

ledger = CommandRegistry("ledger")


def _note(ctx: CommandContext, op: str, **extra: object) -> None:
    line = json.dumps({"op": op, "task": ctx.task_id, "cursor": ctx.cursor, "item": ctx.item_index,
                       "key": ctx.idempotency_key, "time": time.time(), "pid": os.getpid(), **extra}) + "\n"
    fd = os.open(os.environ["BATON_TEST_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _effect(ctx: CommandContext, op: str) -> None:
    path = os.path.join(os.environ["BATON_TEST_EFFECTS"], f"{op}-{ctx.idempotency_key}".replace(":", "_"))
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        pass  # done by an earlier run of the same unit: nothing more to do


@ledger.command()
def apply(ctx: CommandContext) -> dict:
    time.sleep(float(ctx.parameters.get("work_seconds", 0)))
    _effect(ctx, "apply")
    _note(ctx, "apply")
    return {"applied": ctx.item_index if ctx.item_index is not None else ctx.cursor}


@ledger.command()
def undo(ctx: CommandContext) -> dict:
    _effect(ctx, "undo")
    _note(ctx, "undo")
    return {}


@ledger.command()
def linger(ctx: CommandContext) -> dict:
    """A long command that starts a program of its own: it notes its start (with its own pid and
    the program's), works for `work_seconds`, then makes its effect. For the test that kills its
    module in the middle (tests/e2e/test_command_process_lifetime.py): nothing of it may remain."""
    helper = subprocess.Popen(["sleep", "600"])  # a program the command started: dies with it too
    _note(ctx, "begun", helper=helper.pid)
    time.sleep(float(ctx.parameters.get("work_seconds", 0)))
    _effect(ctx, "apply")
    _note(ctx, "apply")
    helper.kill()
    helper.wait()
    return {}


def read_ledger(path) -> list[dict]:
    try:
        with open(path) as lines:
            return [json.loads(line) for line in lines if line.strip()]
    except FileNotFoundError:
        return []
