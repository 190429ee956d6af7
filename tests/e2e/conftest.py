import pytest

from tests.support.cluster import Cluster

ENGINE_FLOWS = """
version: 1
defaults:
  timeout: 5
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
def cluster(rabbitmq_url, tmp_path_factory):
    """resource, mysql and monitor modules plus a sweeper, as real processes on RabbitMQ + SQLite."""
    cluster = Cluster(tmp_path_factory.mktemp("cluster"), rabbitmq_url, ENGINE_FLOWS)
    try:
        for module in ("resource", "mysql", "monitor"):
            cluster.start_module(module)
        cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()
