"""The slowest test files of a run, printed at its end beside pytest's slowest tests.

`make test` runs each file whole on one pytest-xdist worker (`--dist loadfile`), so the run's
length is set by files, not single tests: a file of many 10 s tests never shows among the
slowest tests, yet can hold a worker for minutes. This sums each file's setup, call and teardown
times as the reports come in (on the controller under xdist, or in the one process without it)
and says which files took longest, and when each ended after the run began: the list
tests/support/file_order.py keeps ("the longest first") is checked against it by hand.

Beside the time, the CPU each file cost: its worker's own and that of the processes it started
and waited for (a cluster's modules, a CLI call), from getrusage around each test. On two cores
the run is CPU-bound for much of its length, so a file's CPU, not its time, is what it takes from
the others. `BATON_TEST_FILE_DURATIONS=<path>` writes every file's figures there, tab-separated.
"""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest

SHOWN = 15
LAST = 8


class FileDurations:
    def __init__(self) -> None:
        self.began = time.monotonic()
        self.seconds: dict[str, float] = defaultdict(float)
        self.cpu: dict[str, float] = defaultdict(float)
        self.ended: dict[str, float] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds[path] += report.duration
        self.cpu[path] += dict(report.user_properties).get(CPU_PROPERTY, 0.0)
        self.ended[path] = time.monotonic() - self.began

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:  # noqa: ANN001
        if not self.seconds:
            return
        terminalreporter.write_sep("=", f"slowest {SHOWN} files (time, CPU)")
        for path, seconds in sorted(self.seconds.items(), key=lambda kv: -kv[1])[:SHOWN]:
            terminalreporter.write_line(self._line(path))
        terminalreporter.write_sep("-", f"the {SHOWN} files that took most CPU, of {sum(self.cpu.values()):.0f} s")
        for path, _ in sorted(self.cpu.items(), key=lambda kv: -kv[1])[:SHOWN]:
            terminalreporter.write_line(self._line(path))
        terminalreporter.write_sep("-", f"the last {LAST} files to end")
        for path, _ in sorted(self.ended.items(), key=lambda kv: kv[1])[-LAST:]:
            terminalreporter.write_line(self._line(path))
        if target := os.environ.get("BATON_TEST_FILE_DURATIONS"):
            with open(target, "w") as out:
                out.write("file\tseconds\tcpu_seconds\tended_minutes\n")
                for path, seconds in sorted(self.seconds.items(), key=lambda kv: -kv[1]):
                    out.write(f"{path}\t{seconds:.1f}\t{self.cpu[path]:.1f}\t{self.ended[path] / 60:.1f}\n")

    def _line(self, path: str) -> str:
        return (f"{self.seconds[path]:8.1f}s {self.cpu[path]:7.1f}s CPU  ended at {self.ended[path] / 60:5.1f} min  "
                f"{path}")


CPU_PROPERTY = "cpu_seconds"


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class CpuPerPhase:
    """On the process that runs the tests: the CPU spent since the last report (a phase: setup,
    call or teardown, with what ran between them) put on each report, which pytest-xdist carries
    to the controller with the rest of it."""

    def __init__(self) -> None:
        self.mark = _cpu_seconds()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
        outcome = yield
        now = _cpu_seconds()
        outcome.get_result().user_properties.append((CPU_PROPERTY, now - self.mark))
        self.mark = now


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(CpuPerPhase(), "baton-cpu-per-phase")
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) only
        config.pluginmanager.register(FileDurations(), "baton-file-durations")
