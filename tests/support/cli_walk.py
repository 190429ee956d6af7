"""Every `baton` command run as its own process, each with the least arguments its parameters
require, for the tests that run them all with the store or the broker down
(tests/integration/test_cli_services_down.py, test_cli_broker_down.py).

The commands are enumerated from the click group, so a new command is walked too: an argument or
required option gets a value of its type.

A walk of every command costs a process start (a third of a CPU second or more) per command and
store. `make test` walks a representative set, `representative()`: one command per command
module and group, so each way a command opens the store or the broker is met. The soak tier
(`make soak`) walks every command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import click

from common.errors import EXIT_UNAVAILABLE
from oss.cli import COMMAND_MODULES, main
from tests.support.cluster import REPO
from tests.support.ports import free_port

COMMAND_DEADLINE = 240.0  # a process retries a dead broker for 15 s first; generous for a loaded machine

# Arguments that make a command reach the store: check-flows only does with --live; a module
# that exists (any other name is refused before anything is opened); a schedule needs a timing;
# a task type flows.yaml defines; a bulk action a filter (none is refused as a usage error); a
# callback what it reports.
ARGUMENTS = {
    ("check-flows",): ["--live"],
    ("callback",): ["x", "--succeed"],
    ("module",): ["resource"],
    ("schedules", "add"): ["nightly", "demo", "--every", "60"],
    ("submit",): ["demo"],
    **{("bulk", action): ["--status", "RUNNING", "--reason", "x"]
       for action in ("cancel", "retry", "retry-rollback", "pause", "resume")},
}  # fmt: skip
# Processes that keep running: their log is their output, so with a broker that does not answer
# they log their reconnection attempts before the one line that says why they stop.
PROCESSES = {("oss",), ("sweeper",), ("module",), ("up",), ("demo",)}
# They start without a broker (what they publish waits in the store's outbox): not walked with
# the broker down, they would serve until stopped.
NEED_NO_BROKER_TO_START = {("oss",), ("up",)}
# They read flows files only, never the store or the broker (tests/unit/test_flow_versions.py).
NEED_NEITHER = {("flows", "diff"), ("flows", "versions")}
# It declares the broker's queues only: not walked with the store down (with a broker up, it
# would succeed).
NEED_NO_STORE = {("queues", "move-to-quorum")}
# In a representative walk, these stand for their module or group: the commands that publish a
# message (submit, an operator action, bulk pause) and a process that consumes (module). Any other
# module or group is stood for by its first command by name, so a new one is walked too.
STAND_FOR_THEIR_GROUP = {("submit",), ("cancel",), ("bulk", "pause"), ("module",)}
# Documented exit codes (docs/reference/cli.md).
EXIT_CODES = {0, 1, 2, 3, 4, EXIT_UNAVAILABLE}


def commands(group: click.Group = main, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            if command.invoke_without_command:  # the group alone does something too (`baton modules`)
                yield (*prefix, name), command
            yield from commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


def representative(skip: set[tuple[str, ...]] = frozenset()) -> set[tuple[str, ...]]:  # type: ignore[assignment]
    """One command per command module and group (processes apart from the other commands of
    their module): those of STAND_FOR_THEIR_GROUP, else the first by name."""
    chosen: dict[tuple[object, ...], tuple[str, ...]] = {}
    for path, _ in commands():
        if path in skip:
            continue
        key = (COMMAND_MODULES[path[0]], path[:-1], path in PROCESSES)
        if key not in chosen or path in STAND_FOR_THEIR_GROUP:
            chosen[key] = path
    return set(chosen.values())


def _value(param: click.Parameter) -> str:
    if isinstance(param.type, click.Choice):
        return str(param.type.choices[0])
    if isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType)):
        return "1"
    return "x"


def least_arguments(path: tuple[str, ...], command: click.Command, arguments: dict) -> list[str]:  # type: ignore[type-arg]
    if path in arguments:
        return list(arguments[path])
    argv: list[str] = []
    for param in command.params:
        if isinstance(param, click.Argument) and param.required:
            argv += [_value(param)] * max(param.nargs, 1)
        elif isinstance(param, click.Option) and param.required:
            argv += [param.opts[0], _value(param)]
    return argv


@dataclass
class Run:
    argv: list[str]
    code: int | None
    stderr: str

    @property
    def lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]

    def __str__(self) -> str:
        return f"baton {' '.join(self.argv)} -> {self.code}\n{self.stderr[-3000:]}"


def walk(env: dict[str, str], cwd: Path, skip: set[tuple[str, ...]] = frozenset(),  # type: ignore[assignment]
         arguments: dict = ARGUMENTS, workers: int = 4,  # type: ignore[type-arg]
         only: set[tuple[str, ...]] | None = None) -> list[tuple[tuple[str, ...], Run]]:
    """Runs every command not in `skip` (and in `only`, when given), `workers` at a time."""
    todo = [(path, [*path, *least_arguments(path, command, arguments)]) for path, command in commands()
            if path not in skip and (only is None or path in only)]  # fmt: skip

    def run(argv: list[str]) -> Run:
        try:
            done = subprocess.run([sys.executable, "-m", "oss.cli", *argv], env=env, cwd=cwd, capture_output=True,
                                  text=True, timeout=COMMAND_DEADLINE)  # fmt: skip
        except subprocess.TimeoutExpired as e:
            return Run(argv, None, f"still running after {COMMAND_DEADLINE} s: {e.stderr!r}")
        return Run(argv, done.returncode, done.stderr)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(zip([path for path, _ in todo], pool.map(run, [argv for _, argv in todo]), strict=True))


def environment(tmp_path: Path, store_url: str, broker_url: str | None = None) -> dict[str, str]:
    """A broker_url of None: a port nothing listens on."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("BATON_")}
    return {
        **env,
        "PYTHONPATH": str(REPO),  # this checkout's `baton`, whatever the venv was installed from
        "BATON_STORE_URL": store_url,
        "BATON_BROKER_URL": broker_url or f"amqp://guest:guest@127.0.0.1:{free_port()}/",
        "BATON_FLOWS_PATH": str(REPO / "flows.yaml"),
        "BATON_STORE_TIMEOUT_SECONDS": "1",
        "BATON_OSS_PORT": str(free_port()),
        "BATON_API_TOKENS": "walker:walker-token-0123456789:operator",
    }


def dead_sqlite(tmp_path: Path) -> str:
    (tmp_path / "a-file").write_text("not a directory")
    return f"sqlite:///{tmp_path}/a-file/baton.db"  # a folder that cannot exist, even for root


def dead_mongo(tmp_path: Path) -> str:
    return f"mongodb://127.0.0.1:{free_port()}/baton?serverSelectionTimeoutMS=500&connectTimeoutMS=500"
