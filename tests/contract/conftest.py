"""Session hooks of the contract suites (fixtures live in the *_fixtures modules)."""

from __future__ import annotations

import pytest

from tests.contract.store_fixtures import report_header


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Also at the end, where a run of the whole tree (no header from here) still says it.
    ran = any(
        "test_store_contract.py" in getattr(report, "nodeid", "")
        for reports in terminalreporter.stats.values()
        for report in reports
    )
    if ran:
        for line in report_header():
            terminalreporter.write_line(line)
