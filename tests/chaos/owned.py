"""What the real create flow (`chaos_mysql`: check_resource, init_instance, deduct_resource) must
leave behind once a scenario settled: MariaDB and the resource inventory hold exactly what the
successful tasks own, and nothing of the tasks that rolled back.

    inventory = add_host(cluster.store_url)     # before the modules start
    ...
    assert_only_successes_own_anything(cluster, sandbox, inventory)
"""

from __future__ import annotations

import time

from common.engine.states import TaskStatus
from modules.resource.inventory.factory import open_inventory
from modules.resource.inventory.port import Capacity, ClaimState, Inventory
from modules.resource.requests import need_from

HOST = "db-1"
# Room for every task a full run submits: a refused reservation would be a planned outcome changed.
HOST_CAPACITY = Capacity(cpu=4096, memory_mb=1 << 24, storage_gb=100_000)


def add_host(store_url: str) -> Inventory:
    """The inventory of a scenario's store, with one host big enough for every task."""
    inventory = open_inventory(store_url)
    inventory.add_host(HOST, HOST_CAPACITY, time.time())
    return inventory


def assert_only_successes_own_anything(cluster, sandbox, inventory: Inventory) -> None:
    """MariaDB (databases, users, ownership rows) and the inventory (live claims, the host's use)
    hold exactly what the successful `chaos_mysql` tasks own: nothing of a rolled-back task,
    nothing missing, nothing twice."""
    tasks = [t for t in cluster.tasks() if t.TaskType == "chaos_mysql"]
    succeeded = [t for t in tasks if t.TaskStatus is TaskStatus.SUCCESS]
    owners = {t.Parameters["name"] for t in succeeded}
    assert sandbox.databases() == owners, "leaked or missing databases"
    assert {user for user, _host in sandbox.users()} == owners, "leaked or missing users"
    assert sandbox.owned() == owners, "leaked or missing ownership rows"
    now = time.time()
    live = inventory.list_claims(now, live_only=True)
    assert sorted(c.holder for c in live) == sorted(owners), "leaked, missing or doubled reservations"
    assert all(c.state is ClaimState.DEDUCTED for c in live), "a successful task's reservation never deducted"
    hosts = {h.name: h for h in inventory.list_hosts(now)}
    if HOST in hosts:  # the scenarios that use add_host: the host's use is the sum of the claims
        assert hosts[HOST].used == Capacity.total(need_from(t.Parameters) for t in succeeded), "host use"
