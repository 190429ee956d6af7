"""Session hooks of the contract suites (fixtures live in the *_fixtures modules).

The real-server fixtures are registered here, once for every contract suite: a suite that asks
for `real_mongo_client` gets it without importing it, and a session fixture imported into two
test modules would otherwise be two fixtures (two containers started).
"""

from __future__ import annotations

import pytest

from tests.contract.store_fixtures import real_mongo_client, real_mongo_url, report_header
from tests.support.threads import no_baton_thread_outlives_the_module  # noqa: F401  (tests/support/threads.py says why)

__all__ = ["real_mongo_client", "real_mongo_url"]


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
