"""The callbacks guide's deployment (docs/guide/callbacks.md) as real processes: its flows, the
guide's `tickets` module and a stand-in resource module, and the board directory where the
commands leave the tokens they give out (tests/support/callback_commands.py), which the test,
playing the other system, reads."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.support.doc_examples import blocks
from tests.support.oss_deployment import oss_deployment
from tests.support.test_store import cluster_mongo_url

(GUIDE,) = blocks("docs/guide/callbacks.md", "A command that waits for a callback", "yaml")
GUIDE_FLOWS = "version: 1\ndefaults: {timeout: 10, retry: 0}\n" + GUIDE
MODULES = {"resource": "tests.support.standin_commands:resource", "tickets": "tests.support.callback_commands:registry"}


@contextmanager
def callback_deployment(workdir: Path, rabbitmq_url: str, request: Any, flows: str = GUIDE_FLOWS,
                        board_delay: float | None = None, board_hold: str | None = None) -> Iterator[tuple[Any, str]]:  # fmt: skip
    """(cluster, OSS base URL). `board_delay`: seconds the board takes to take a change (the
    window in which a killed module loses the token it gave out). `board_hold`: the summary of a
    change whose first token the board holds its command on until the test answered it."""
    board = workdir / "board"
    board.mkdir()
    os.environ["BATON_TEST_BOARD"] = str(board)  # board_file() in the test reads the same directory
    extra_env = {"BATON_TEST_BOARD": str(board)}
    if board_delay is not None:
        extra_env["BATON_TEST_BOARD_DELAY"] = str(board_delay)
    if board_hold is not None:
        extra_env["BATON_TEST_BOARD_HOLD"] = board_hold
    with oss_deployment(workdir, rabbitmq_url, flows, MODULES, mongo_url=cluster_mongo_url(request),
                        extra_env=extra_env) as (cluster, base):  # fmt: skip
        yield cluster, base
