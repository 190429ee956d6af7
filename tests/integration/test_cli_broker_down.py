"""Every `baton` command, run with the broker down (a port nothing listens on), says so in one
line and exits with a documented code (docs/reference/cli.md); never a traceback. Those that
publish, and the processes that consume, exit 5 naming the broker.

The commands are enumerated from the click group (tests.support.cli_walk), so a new command is
walked too: `make test` walks one command per command module and group (`representative`), the
soak tier every command.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import EXIT_UNAVAILABLE
from common.store.sqlite.tasks import SqliteStore
from tests.support.cli_walk import (
    ARGUMENTS,
    EXIT_CODES,
    NEED_NEITHER,
    NEED_NO_BROKER_TO_START,
    PROCESSES,
    commands,
    environment,
    representative,
    walk,
)

pytestmark = pytest.mark.slow
SKIP = NEED_NO_BROKER_TO_START | NEED_NEITHER


@pytest.mark.parametrize("every", [False, pytest.param(True, marks=pytest.mark.soak)], ids=["representative", "every"])
def test_every_command_with_the_broker_down_says_so_in_one_line(tmp_path: Path, every: bool) -> None:
    # check-flows without --live: with the store up, --live lists every module not running.
    arguments = {path: argv for path, argv in ARGUMENTS.items() if path != ("check-flows",)}
    # A command that publishes tries one connection first and fails at once; the processes keep
    # trying to start consuming for a while (FIRST_CONNECT_SECONDS): all at once, so the walk
    # takes one such wait, not one per process.
    SqliteStore(tmp_path / "baton.db").close()  # the store is up: a command that only reads never makes one
    runs = walk(environment(tmp_path, f"sqlite:///{tmp_path}/baton.db"), tmp_path, skip=SKIP, arguments=arguments,
                workers=len(list(commands())), only=None if every else representative(SKIP))  # fmt: skip
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
    # Those that publish: a submission, every operator action, the processes that consume (those
    # of them the walk ran: a representative walk runs submit, cancel, bulk pause and module).
    walked = {path for path, _ in runs}
    needs_broker = {("submit",), ("cancel",), ("skip",), ("bulk", "pause"), ("sweeper",), ("module",), ("demo",)}
    assert len(needs_broker & walked) >= 4
    for path in needs_broker & walked:
        assert path in unavailable, path
