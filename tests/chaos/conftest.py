"""Fixtures of the fault-injection suite, and the per-scenario table at the end of the run.

The normal test run collects a reduced version of every scenario (marker `chaos`);
BATON_CHAOS=full (`make chaos`) runs the full ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from tests.chaos import report
from tests.chaos.harness import ChaosCluster, delete_queues, rabbitmqctl_shared
from tests.chaos.plans import ALL_QUEUES, FULL
from tests.chaos.private_rabbit import PrivateRabbit, PrivateRabbitError, rabbitmq_bin_dir
from tests.support.services import in_ci, require
from tests.support.vhosts import rabbitmq_vhost
from tests.support.test_store import cluster_mongo_url
from tests.support.threads import no_baton_thread_outlives_the_module  # noqa: F401  (tests/support/threads.py says why)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: fault-injection scenario (reduced unless BATON_CHAOS=full)")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not report.ROWS:
        return
    mode = "FULL (BATON_CHAOS=full)" if FULL else "reduced"
    terminalreporter.section(f"chaos scenarios, {mode}")
    terminalreporter.write_line(report.table(report.ROWS))
    terminalreporter.write_line(
        "final S/R/F: SUCCESS / ROLLED_BACK / ROLLBACK_FAILED. execs: command executions (claims); "
        "dup execs: executions beyond the attempts the command itself concluded; lost: attempts "
        "concluded by the sweeper (lease lapsed); dup commits must be 0."
    )


@pytest.fixture(scope="session")
def chaos_vhost() -> Iterator[str]:
    """One vhost of the shared RabbitMQ for the whole chaos session (creating and deleting one
    per scenario costs seconds of rabbitmqctl each); every scenario starts on emptied queues."""
    with rabbitmq_vhost("baton-chaos") as url:
        yield url


@pytest.fixture
def make_cluster(chaos_vhost, tmp_path, request) -> Iterator[Callable[..., ChaosCluster]]:
    """A cluster on the chaos vhost (queues deleted first), stopped afterwards. One per test.
    Its store: SQLite, or MongoDB on SecantusDB with BATON_TEST_STORE=mongo."""
    with contextlib.ExitStack() as stack:

        def make(**env: str) -> ChaosCluster:
            assert not stack._exit_callbacks, "one cluster per scenario: they share the vhost"
            delete_queues(chaos_vhost, ALL_QUEUES)
            workdir = tmp_path / "cluster"
            workdir.mkdir()
            cluster = ChaosCluster(
                workdir, chaos_vhost, env, ctl=rabbitmqctl_shared(chaos_vhost), mongo_url=cluster_mongo_url(request)
            )
            stack.callback(cluster.stop_all)
            return cluster

        yield make


@pytest.fixture(scope="module")
def private_rabbit() -> Iterator[PrivateRabbit]:
    """A RabbitMQ node of our own for scenarios that restart or kill the broker."""
    require(rabbitmq_bin_dir() is not None, "rabbitmq-server not installed (private node)")
    rabbit = PrivateRabbit()
    try:
        rabbit.start()
    except PrivateRabbitError as exc:
        rabbit.close()
        if in_ci():
            pytest.fail(str(exc))
        pytest.skip(f"private RabbitMQ node would not start: {exc}")
    try:
        yield rabbit
    finally:
        rabbit.close()


@pytest.fixture(scope="session")
def private_cluster() -> Iterator["PrivateCluster"]:
    """Three private RabbitMQ nodes clustered (tests.chaos.private_cluster), for the session; the
    nodes a test killed are started again for the next one (see `cluster_nodes`)."""
    from tests.chaos.private_cluster import PrivateCluster

    require(rabbitmq_bin_dir() is not None, "rabbitmq-server not installed (private cluster)")
    cluster = PrivateCluster()
    try:
        try:
            seconds = cluster.start()
        except PrivateRabbitError as exc:
            if in_ci():
                pytest.fail(str(exc))
            pytest.skip(f"private RabbitMQ cluster would not form: {exc}")
        print(f"\nCHAOS three-node RabbitMQ cluster formed in {seconds:.1f}s")
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster_nodes(private_cluster):
    """The private cluster with all three nodes running."""
    private_cluster.start_stopped()
    return private_cluster
