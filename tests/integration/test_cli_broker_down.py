"""Every `baton` command, run with the broker down (a port nothing listens on), says so in one
line and exits with a documented code (docs/reference/cli.md); never a traceback. Those that
publish, and the processes that consume, exit 5 naming the broker.

The commands are enumerated from the click group (tests.support.cli_walk), so a new command is
walked too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import EXIT_UNAVAILABLE
from tests.support.cli_walk import (
    ARGUMENTS,
    EXIT_CODES,
    NEED_NEITHER,
    NEED_NO_BROKER_TO_START,
    PROCESSES,
    commands,
    environment,
    walk,
)

pytestmark = pytest.mark.slow


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
