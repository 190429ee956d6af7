"""Every `baton` command, run with the store down (an unopenable SQLite file, a MongoDB port
nothing listens on), says so in one line naming the store and exits with the documented code
(docs/reference/cli.md: 5, the store or the broker cannot be reached or opened); never a
traceback. The broker is up, so a command that opens it first still meets the store.

The commands are enumerated from the click group (tests.support.cli_walk), so a new command is
walked too: `make test` walks one command per command module and group (`representative`), the
soak tier every command. The broker-down walk is test_cli_broker_down.py: a file of its own, so the two
(each a minute of processes) run on different workers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import EXIT_UNAVAILABLE
from oss.cli import COMMAND_MODULES
from tests.support.cli_walk import NEED_NEITHER, NEED_NO_STORE, dead_mongo, dead_sqlite, environment, representative, walk

pytestmark = pytest.mark.slow
SKIP = NEED_NEITHER | NEED_NO_STORE


@pytest.mark.parametrize("every", [False, pytest.param(True, marks=pytest.mark.soak)], ids=["representative", "every"])
@pytest.mark.parametrize(("store", "kind"), [(dead_sqlite, "sqlite"), (dead_mongo, "mongodb")],
                         ids=["sqlite-unopenable", "mongo-closed-port"])  # fmt: skip
def test_every_command_with_the_store_down_says_so_in_one_line(tmp_path: Path, rabbitmq_url: str, store, kind: str, every: bool) -> None:  # type: ignore[no-untyped-def]
    # The broker is up (a vhost of this module's): a command that opens the broker first meets
    # the store that is down, not a broker it would wait 30 s for. Each waits on its own process
    # and a refused connection, so more at once than the cores.
    env = environment(tmp_path, store(tmp_path), rabbitmq_url)
    runs = walk(env, tmp_path, skip=SKIP, workers=8, only=None if every else representative(SKIP))
    if every:
        assert len(runs) > 30  # the walk found the commands (every leaf of every group)
    # Every command module has a command walked (flows needs neither store nor broker, queues no store).
    assert {COMMAND_MODULES[path[0]] for path, _ in runs} == set(COMMAND_MODULES.values()) - {"oss.cli.flows", "oss.cli.queues"}
    for _, run in runs:
        assert run.code == EXIT_UNAVAILABLE, str(run)
        assert "Traceback" not in run.stderr, str(run)
        assert len(run.lines) == 1 and run.lines[0].startswith("baton: "), str(run)
        assert "cannot" in run.lines[0] and kind in run.lines[0], str(run)  # the store it could not reach
