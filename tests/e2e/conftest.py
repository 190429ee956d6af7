import pytest

from tests.support.cluster import STATE_DEADLINE, Cluster
from tests.support.test_store import cluster_mongo_url
from tests.support.threads import no_baton_thread_outlives_the_module  # noqa: F401  (tests/support/threads.py says why)

# Steps run under a timeout that only a broken run reaches: with 5 s, a stand-in command a
# loaded machine ran late timed out and the task ended otherwise than the test says. A test of
# the timeout itself (hang_prone) sets its own.
ENGINE_FLOWS = f"""
version: 1
defaults:
  timeout: {STATE_DEADLINE:g}
""" + """\
  retry: 1
  backoff: {initial: 0.1, max: 0.4, multiplier: 2, jitter: 0.1}
task_types:
  create_mysql_instance:
    steps:
      - name: check_resource
        normal:   {module: resource, command: check_resource}
        rollback: {module: monitor,  command: report_event}
      - name: init_instance
        normal:   {module: mysql, command: init_instance}
        rollback: {module: mysql, command: clean_instance}
      - name: deduct_resource
        normal:   {module: resource, command: deduct_resource}
        rollback: {module: resource, command: restore_resource}
  hang_prone:
    steps:
      - name: init_instance
        normal:   {module: mysql, command: init_instance, timeout: 1, retry: 2,
                   backoff: {initial: 0.5, max: 1, multiplier: 2, jitter: 0}}
        rollback: {module: mysql, command: clean_instance}
"""


@pytest.fixture(scope="module")
def cluster(rabbitmq_url, tmp_path_factory, request):
    """resource, mysql and monitor modules plus a sweeper, as real processes on RabbitMQ + SQLite
    (or MongoDB on SecantusDB with BATON_TEST_STORE=mongo: tests.support.test_store).

    The engine is under test here, not the modules: resource and mysql serve stand-in commands
    of the same names (no inventory, no MariaDB); the monitor is the real one, alarm queue and all.
    """
    cluster = Cluster(
        tmp_path_factory.mktemp("cluster"), rabbitmq_url, ENGINE_FLOWS, mongo_url=cluster_mongo_url(request)
    )
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource", registry="tests.support.standin_commands:resource")
            cluster.start_module("mysql", registry="tests.support.standin_commands:mysql")
            cluster.start_module("monitor")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()
