"""A contract suite whose real backend is configured runs on it, and FAILS (never skips) when that
backend does not answer: a run told to use a server must not look green without it.

Each case runs pytest on the contract suites in a process of its own, with the environment a
tester would set."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from tests.support.cluster import REPO
from tests.support.ports import free_port

pytestmark = pytest.mark.slow  # each case runs pytest on the contract suites

RUN_DEADLINE = 900.0  # collecting every contract suite on a loaded machine takes a while


# The contract suites do not use Schemathesis; its pytest plugin (Hypothesis and an HTTP stack
# with it) is a large share of each run's start.
NO_PLUGINS = ["-p", "no:cacheprovider", "-p", "no:schemathesis"]


def pytest_run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_TEST_", "PYTEST_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *NO_PLUGINS, "-q", "-rfEs", "--durations=0", *args],
        cwd=REPO, env={**clean, "COLUMNS": "1000", **env}, capture_output=True, text=True, timeout=RUN_DEADLINE,
    )  # fmt: skip


def outcome(done: subprocess.CompletedProcess[str], word: str) -> int:
    found = re.search(rf"(\d+) {word}", done.stdout.splitlines()[-1] if done.stdout else "")
    return int(found.group(1)) if found else 0


def files_of(lines: str, prefix: str) -> set[str]:
    return {m.group(1) for m in re.finditer(rf"^{prefix}(tests/contract/\w+\.py)::", lines, flags=re.MULTILINE)}


def test_a_configured_mongodb_runs_every_contract_suite_on_it(secantus: Any) -> None:
    """BATON_TEST_MONGO_URL (here a SecantusDB server) reaches every suite, the search one too."""
    url = secantus.url
    done = pytest_run("tests/contract/test_store_search.py", "-k", "mongo-real", BATON_TEST_MONGO_URL=url)
    assert done.returncode == 0, done.stdout[-4000:]
    assert outcome(done, "passed") >= 18 and outcome(done, "error") == 0 and outcome(done, "skipped") == 0, done.stdout[-4000:]


def test_a_configured_mongodb_that_does_not_answer_fails_every_suite_that_uses_it() -> None:
    dead = f"mongodb://127.0.0.1:{free_port()}/?serverSelectionTimeoutMS=300&connectTimeoutMS=300"
    # Every suite's cases error at the same session fixture: a full traceback of each (through
    # pymongo's frames) costs more CPU than the rest of the run; one line each says as much here.
    done = pytest_run("tests/contract", "-k", "mongo-real", "--tb=line", BATON_TEST_MONGO_URL=dead)
    assert done.returncode != 0
    assert outcome(done, "passed") == 0 and outcome(done, "skipped") == 0, done.stdout[-4000:]
    assert "not found" not in done.stdout, done.stdout[-4000:]  # no fixture is missing anywhere
    summary = [line for line in done.stdout.splitlines() if line.startswith(("ERROR tests/", "FAILED tests/"))]
    assert len(summary) == outcome(done, "errors?") + outcome(done, "failed") > 0
    assert all("does not answer" in line for line in summary), "\n".join(summary[:20])
    # Every suite with a real-MongoDB case: the store, search, inventory, lock, schedule... ones.
    assert len(files_of("\n".join(summary), "(?:ERROR|FAILED) ")) >= 10, "\n".join(summary[:20])


def test_a_configured_rabbitmq_that_does_not_answer_fails_the_broker_suite() -> None:
    done = pytest_run("tests/contract/test_broker_contract.py", "-m", "rabbitmq",
                      BATON_TEST_RABBITMQ_PORT=str(free_port()))  # fmt: skip
    assert done.returncode != 0
    assert outcome(done, "passed") == 0 and outcome(done, "skipped") == 0, done.stdout[-4000:]
    assert outcome(done, "error") + outcome(done, "failed") > 0
    assert "configured but unusable" in done.stdout


@pytest.mark.parametrize("ci", ["true", ""])
def test_an_unconfigured_rabbitmq_skips_on_a_laptop_and_fails_under_ci(ci: str) -> None:
    """Nothing named a server and none answers at the default address: a laptop skips, CI fails.
    The default address is moved to a closed port for the run (the shared broker stays up)."""
    closed = str(free_port())
    code = (
        "import sys, pytest\n"
        "import tests.support.services as s\n"
        f"s.RABBITMQ_PORT = {closed}\n"
        f"sys.exit(pytest.main([*{NO_PLUGINS!r}, '-q', '-rs', '-m', 'rabbitmq',"
        " 'tests/contract/test_broker_contract.py']))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("BATON_TEST_", "PYTEST_", "CI"))}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**clean, "CI": ci}, capture_output=True,
                          text=True, timeout=RUN_DEADLINE)  # fmt: skip
    if ci:
        assert done.returncode != 0 and outcome(done, "skipped") == 0, done.stdout[-3000:]
        assert "missing under CI" in done.stdout
    else:
        assert done.returncode == 0 and outcome(done, "skipped") > 0 and outcome(done, "passed") == 0, done.stdout[-3000:]
