"""Every `baton` command, run with the store or the broker down, says so in one line and exits with
the documented code (docs/reference/cli.md: 5, the store or the broker cannot be reached or opened);
never a traceback.

The commands are enumerated from the click group, so a new command is walked too; each gets the
least arguments its parameters require (an argument or required option gets a value of its type).
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
import pytest

from common.errors import EXIT_UNAVAILABLE
from oss.cli import main
from tests.support.cluster import REPO
from tests.support.ports import free_port

pytestmark = pytest.mark.slow

COMMAND_DEADLINE = 240.0  # a dead broker is retried for 30 s first; generous for a loaded machine

# Arguments that make a command reach the store: check-flows only does with --live; a module
# that exists (any other name is refused before anything is opened); a schedule needs a timing;
# a task type flows.yaml defines; a bulk action a filter (none is refused as a usage error).
ARGUMENTS = {
    ("check-flows",): ["--live"],
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
# Documented exit codes (docs/reference/cli.md).
EXIT_CODES = {0, 1, 2, 3, 4, EXIT_UNAVAILABLE}


def commands(group: click.Group = main, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))
        else:
            yield (*prefix, name), command


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
         arguments: dict = ARGUMENTS, workers: int = 4) -> list[tuple[tuple[str, ...], Run]]:  # type: ignore[type-arg]
    todo = [(path, [*path, *least_arguments(path, command, arguments)]) for path, command in commands()
            if path not in skip]  # fmt: skip

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


@pytest.mark.parametrize(("store", "kind"), [(dead_sqlite, "sqlite"), (dead_mongo, "mongodb")],
                         ids=["sqlite-unopenable", "mongo-closed-port"])  # fmt: skip
def test_every_command_with_the_store_down_says_so_in_one_line(tmp_path: Path, rabbitmq_url: str, store, kind: str) -> None:  # type: ignore[no-untyped-def]
    # The broker is up (a vhost of this module's): a command that opens the broker first meets
    # the store that is down, not a broker it would wait 30 s for. Each waits on its own process
    # and a refused connection, so more at once than the cores.
    env = environment(tmp_path, store(tmp_path), rabbitmq_url)
    runs = walk(env, tmp_path, skip=NEED_NEITHER | NEED_NO_STORE, workers=8)
    assert len(runs) > 30  # the walk found the commands (every leaf of every group)
    for _, run in runs:
        assert run.code == EXIT_UNAVAILABLE, str(run)
        assert "Traceback" not in run.stderr, str(run)
        assert len(run.lines) == 1 and run.lines[0].startswith("baton: "), str(run)
        assert "cannot" in run.lines[0] and kind in run.lines[0], str(run)  # the store it could not reach


def test_every_command_with_the_broker_down_says_so_in_one_line(tmp_path: Path) -> None:
    # check-flows without --live: with the store up, --live lists every module not running.
    arguments = {path: argv for path, argv in ARGUMENTS.items() if path != ("check-flows",)}
    # Most of them wait out the broker's 30 s of reconnecting, using next to no CPU: all at once,
    # so the walk takes one such wait, not one per dozen commands.
    runs = walk(environment(tmp_path, f"sqlite:///{tmp_path}/baton.db"), tmp_path, skip=NEED_NO_BROKER_TO_START | NEED_NEITHER,
                arguments=arguments, workers=len(list(commands())))  # fmt: skip
    unavailable = set()
    for path, run in runs:
        assert run.code in EXIT_CODES, str(run)
        assert "Traceback" not in run.stderr, str(run)
        if path not in PROCESSES:
            assert len(run.lines) <= 1, str(run)
        if run.code == EXIT_UNAVAILABLE:
            unavailable.add(path)
            # A process's other threads may still log a retry after it, so not always the last.
            said = [line for line in run.lines if line.startswith("baton: ")]
            assert len(said) == 1 and "broker" in said[0], str(run)
    # Those that publish: a submission, every operator action, the processes that consume.
    for needs_broker in [("submit",), ("cancel",), ("skip",), ("bulk", "pause"), ("sweeper",), ("module",), ("demo",)]:
        assert needs_broker in unavailable, needs_broker
