import importlib.util
from pathlib import Path

import pytest

from common.store.mongo.client import open_client
from tests.support import bytecode
from tests.support.naming import run_id
from tests.support.secantus import secantus_server
from tests.support.vhosts import rabbitmq_vhost

# Nothing the run starts outlives it, however it ends (SIGTERM included); the vhosts it made go
# at its end: tests/support/tether.py.
pytest_plugins = ["tests.support.tether", "tests.support.file_durations"]

# The workers' rewritten test modules are cached for the next run (tests/support/bytecode.py).
bytecode.allow_in_this_process()


def pytest_configure(config):
    # The run's id, made before pytest-xdist starts its workers: they inherit it through the
    # environment, so every name any worker makes on a shared server says which run it is from.
    run_id()
    if not hasattr(config, "workerinput"):  # once per run, before the workers and every process start
        bytecode.compile_checkout(Path(__file__).resolve().parents[1])


if importlib.util.find_spec("xdist") is not None:  # the hook exists only with pytest-xdist

    def pytest_xdist_make_scheduler(config, log):
        # The longest files first, and the browser tests on one worker (tests/support/file_order.py).
        from tests.support.file_order import LongestFirst

        return LongestFirst(config, log) if config.getoption("dist") == "loadfile" else None


def pytest_report_header(config):
    # Which stores and servers this run uses (the contract suites' kinds): said before any test.
    from tests.contract.store_fixtures import report_header
    from tests.support.test_store import STORE_ENV, cluster_store

    clusters = "mongo on SecantusDB" if cluster_store() == "mongo" else f"sqlite ({STORE_ENV}=mongo for SecantusDB)"
    return [*report_header(), f"e2e and chaos clusters: {clusters}; database server faults: SecantusDB"]


@pytest.fixture(scope="module")
def rabbitmq_url():
    """An AMQP URL to a vhost of its own, for one test module; deleted afterwards."""
    with rabbitmq_vhost() as url:
        yield url


@pytest.fixture(scope="session")
def secantus():
    """A SecantusDB server process for the whole session (tests.support.secantus). Tests that
    kill or freeze a server start their own, never this one."""
    with secantus_server() as server:
        yield server


@pytest.fixture(scope="session")
def secantus_url(secantus):
    return secantus.url


@pytest.fixture(scope="session")
def secantus_client(secantus):
    """A client opened as baton opens one: w=majority + journal, bounded waits."""
    client = open_client(secantus.url)
    yield client
    client.close()


@pytest.fixture(autouse=True)
def _logging_as_it_was():
    """A test that configures logging (a CLI command run in-process sets its own level) must not
    change what the tests after it log or capture: the configuration is put back afterwards."""
    import structlog

    before = structlog.get_config()
    yield
    structlog.configure(**before)


@pytest.fixture(autouse=True)
def _item_records_as_by_default(request):
    """Every test starts with for_each items kept in records, the engine's default, whatever ran
    before it on the same worker: a CLI command or the embedded service run in-process wires the
    process-wide choice from BATON_ITEM_RECORDS (fan_out.wire_records), and the console tier's
    live service keeps items inline for its whole session. The choice is put back afterwards."""
    from common.engine.kinds.for_each import records as fan_out

    before = fan_out.RECORDS_ENABLED
    if "console" not in request.node.path.parts:  # the console's session keeps its own choice
        fan_out.RECORDS_ENABLED = True
    yield
    fan_out.RECORDS_ENABLED = before


@pytest.fixture(autouse=True)
def _store_first_contact_as_in_a_process():
    """A CLI command run in-process turns on the quick first contact with a MongoDB store for
    the rest of its process (common.store.mongo.first_contact): turned off again after the test, so
    a test that opens a client to a server it froze or stopped waits as a long-running process does."""
    from common.store.mongo import first_contact

    yield
    first_contact.fail_fast = False
    first_contact.answered.clear()


@pytest.fixture
def inline_items(monkeypatch):
    """for_each steps opened in this test keep their items inline in the task document, as a
    task stored before item records, a sub-flow step's or a locked step's do: for the tests of
    that path through the pure engine changes, which no item relay or module drives here."""
    from common.engine.kinds.for_each import records as fan_out

    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", False)
