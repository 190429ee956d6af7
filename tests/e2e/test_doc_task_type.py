"""docs/guide/flows.md (a task type) and docs/guide/modules.md (a module), run as written: the `resize_disk` task
type from its flows.yaml block, on the real resource module and the docs' own `storage`
module (its code block, saved as a package outside the checkout), as processes on RabbitMQ over
a SQLite store and inventory, the way a user adds them."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import pytest

from common.engine.states import TaskStatus
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity, HostState
from tests.support.cluster import REPO, Cluster
from tests.support.doc_examples import blocks


@pytest.fixture(scope="module")
def cluster(rabbitmq_url: str, tmp_path_factory) -> Iterator[Cluster]:
    work = tmp_path_factory.mktemp("docs")
    (flows,) = blocks("docs/guide/flows.md", "Task types: flows.yaml", "yaml")
    commands, main = blocks("docs/guide/modules.md", "Writing a module", "python")
    assert "modules.storage.commands:registry" in main  # the module's __main__ serves that registry
    package = work / "user" / "docs_storage"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "commands.py").write_text(commands)
    cluster = Cluster(work, rabbitmq_url, "version: 1\n" + flows)
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource")
            cluster.start_module("storage", registry="docs_storage.commands:registry",
                                 PYTHONPATH=f"{REPO}{os.pathsep}{work / 'user'}")
            cluster.start_sweeper()
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture(scope="module")
def host(cluster: Cluster) -> Iterator[tuple[object, str]]:
    inventory = open_inventory(cluster.store_url)
    name = f"h-{uuid.uuid4().hex[:8]}"
    inventory.add_host(name, Capacity(cpu=4, memory_mb=8192, storage_gb=100), time.time())
    yield inventory, name
    inventory.close()


def test_the_resize_disk_example_reserves_grows_and_charges(cluster: Cluster, host) -> None:
    inventory, name = host
    task = cluster.wait_final(cluster.submit("resize_disk", name="app_1", storage_gb=30).TaskId, 60)
    assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
    assert [s.Name for s in task.Steps] == ["reserve_storage", "grow_volume", "charge_storage"]
    assert task.Parameters["volume_grown_gb"] == 30  # the docs' storage module answered
    used = inventory.get_host(name, time.time()).used
    assert (used.storage_gb, used.cpu, used.memory_mb) == (30, 0, 0)  # a resize holds storage only


def test_a_resize_the_host_has_no_room_for_rolls_back(cluster: Cluster, host) -> None:
    inventory, name = host
    task = cluster.wait_final(cluster.submit("resize_disk", name="app_2", storage_gb=5000).TaskId, 60)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK and "reserve_storage" in task.TaskMessage
    assert inventory.get_host(name, time.time()).state is HostState.ACTIVE
