"""The slowest test files of a run, printed at its end beside pytest's slowest tests.

`make test` runs each file whole on one pytest-xdist worker (`--dist loadfile`), so the run's
length is set by files, not single tests: a file of many 10 s tests never shows among the
slowest tests, yet can hold a worker for minutes. This sums each file's setup, call and teardown
times as the reports come in (on the controller under xdist, or in the one process without it)
and says which files took longest, and when each ended after the run began: the list
tests/support/file_order.py keeps ("the longest first") is checked against it by hand.
"""

from __future__ import annotations

import time
from collections import defaultdict

import pytest

SHOWN = 15
LAST = 8


class FileDurations:
    def __init__(self) -> None:
        self.began = time.monotonic()
        self.seconds: dict[str, float] = defaultdict(float)
        self.ended: dict[str, float] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds[path] += report.duration
        self.ended[path] = time.monotonic() - self.began

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:  # noqa: ANN001
        if not self.seconds:
            return
        terminalreporter.write_sep("=", f"slowest {SHOWN} files")
        for path, seconds in sorted(self.seconds.items(), key=lambda kv: -kv[1])[:SHOWN]:
            terminalreporter.write_line(f"{seconds:8.1f}s  ended at {self.ended[path] / 60:5.1f} min  {path}")
        terminalreporter.write_sep("-", f"the last {LAST} files to end")
        for path, ended in sorted(self.ended.items(), key=lambda kv: kv[1])[-LAST:]:
            terminalreporter.write_line(f"{self.seconds[path]:8.1f}s  ended at {ended / 60:5.1f} min  {path}")


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) only
        config.pluginmanager.register(FileDurations(), "baton-file-durations")
