"""The `tickets` module of docs/guide/callbacks.md, run as written: its python block is executed
here with a stand-in change board, and module processes serve `registry`
(tests/e2e/test_callbacks.py, tests/e2e/test_callbacks_kill_loop.py).

The stand-in board is what the other system hears: each token a command gives out is appended to
a file of the directory $BATON_TEST_BOARD named after the step's idempotency key, one a line;
a withdrawal writes `<key>.withdrawn`. $BATON_TEST_BOARD_DELAY seconds pass after a token is
written before the command returns (it has given its token out and not yet waits: where a
callback is kept, and where a kill lands, in the kill loop). The change whose summary is
$BATON_TEST_BOARD_HOLD holds its first token's command until `<key>.answered` exists (the test
answered it: a callback kept while its command runs, however slow the machine), at most a minute.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from pathlib import Path

from tests.support.doc_examples import blocks

PAGE = "docs/guide/callbacks.md"


def board_file(key: str) -> Path:
    return Path(os.environ["BATON_TEST_BOARD"]) / re.sub(r"[^A-Za-z0-9_.-]", "_", key)


class ChangeBoard:
    def submit(self, summary: str, *, callback: str, key: str) -> None:
        with board_file(key).open("a") as tokens:
            tokens.write(callback + "\n")
        time.sleep(float(os.environ.get("BATON_TEST_BOARD_DELAY", "0")))
        if summary == os.environ.get("BATON_TEST_BOARD_HOLD") and len(board_file(key).read_text().split()) == 1:
            answered, deadline = board_file(key).with_suffix(".answered"), time.monotonic() + 60
            while not answered.exists() and time.monotonic() < deadline:
                time.sleep(0.05)

    def withdraw(self, *, key: str) -> None:
        board_file(key).with_suffix(".withdrawn").write_text("withdrawn\n")


def _load() -> object:
    (code,) = blocks(PAGE, "A command that waits for a callback", "python")
    namespace: dict = {"change_board": ChangeBoard()}
    exec(compile(code, PAGE, "exec"), namespace)  # noqa: S102 - the guide's own example
    registry, open_change = namespace["registry"], namespace["open_change"]

    @registry.command()
    def open_change_first_beat_only(ctx):  # type: ignore[no-untyped-def]
        """The guide's open_change whose retry beats every 10 minutes, whatever `heartbeat` says:
        a test of a missed heartbeat then reaches the retry's token before it times out too,
        however loaded the machine."""
        if ctx.attempt > 1:
            ctx = dataclasses.replace(ctx, parameters={**ctx.parameters, "heartbeat": 600})
        return open_change(ctx)

    return registry


registry = _load()
