"""Quorum queues on a three-node private RabbitMQ cluster: the adapter's fail-over between
nodes, task priority across a module's whole backlog (a band queue per message priority), and
the node leading the queues killed with kill -9 under mixed tasks.

Every process is given the three nodes (BATON_BROKER_URL, comma-separated) and
BATON_QUEUE_TYPE=quorum. The mix: lines (`chaos_demo`), a graph with a for_each branch
(`chaos_graph`), a sub-flow (`chaos_sub`: a chaos_demo child task), tasks under a keyed lock of
limit 2 (`chaos_locked`), and the real create flow (`chaos_mysql`) on MariaDB and the resource
inventory. Checked afterwards: the invariants of every task (children included), the locks
(tests.chaos.lock_checks, and the lock table holds only what a failed rollback keeps), and
MariaDB and the inventory hold exactly what the successful create tasks own (tests.chaos.owned).

The reduced run (normal test run) kills the leader once; the full run (`make chaos`) also
restarts all three nodes one after another and stops one for a minute. Fail-over times are
printed per fault and process: from the fault to the connection's first opening on a live node,
for the connections that were on the node that went down (the others never lost theirs).
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import datetime

import pika
import pytest

from common.broker.rabbitmq import RabbitBroker
from common.queues import dead_letter_queue, physical_queues
from common.engine.states import TaskStatus
from common.store.gates.lock.table import LockTable
from common.store.gates.lock.table import open_lock_store
from tests.chaos.evidence import assert_clean, log_events
from tests.chaos.harness import ChaosCluster, Feeder
from tests.chaos.lock_checks import lock_violations
from tests.chaos.owned import add_host, assert_only_successes_own_anything
from tests.chaos.plans import FULL, GRAPH_PLANS, LOCKED_PLANS, MYSQL_PLANS, SUB_PLANS, scale
from tests.chaos.private_rabbit import list_queue_messages
from tests.chaos.report import failover_table, record
from tests.contract.broker_fixtures import Collector, eventually
from tests.support.claim_order import claim_rank, first_claim
from tests.support.cluster import Cluster, wait_until
from tests.support.mariadb import mariadb_sandbox
from tests.support.ranked_commands import RANKED_FLOWS

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.timeout(2400 if FULL else 900)]


def port_of(cluster_nodes, node_name: str) -> int:
    return cluster_nodes.node(node_name).port


def failover_seconds(cluster: ChaosCluster, dead_port: int, killed_at: float) -> dict[str, str]:
    """Per process, for each of its connections that was on the node that went down (killed,
    stopped, restarted) at `killed_at`: seconds from then to its first connection after it. A
    consumer reconnects at once; the publisher connection only when it has something to publish
    ("at next publish" if it had nothing since)."""
    found: dict[str, str] = {}
    for name, proc in cluster.procs.items():
        events = [e for e in log_events(proc) if e.get("event") == "broker.connected"]
        for key in sorted({(e.get("role", "?"), e.get("queue", "")) for e in events}):
            mine = [(datetime.fromisoformat(e["timestamp"]).timestamp(), e) for e in events
                    if (e.get("role", "?"), e.get("queue", "")) == key]
            before = [e for t, e in mine if t < killed_at]
            after = [t for t, _ in mine if t >= killed_at]
            if not before or not before[-1].get("node", "").endswith(f":{dead_port}"):
                continue  # not on the dead node: nothing to fail over
            label = f"{name} {key[1] or key[0]}"
            if after:
                found[label] = f"{min(after) - killed_at:.1f}s"
            else:
                found[label] = "at next publish" if key[0] == "publisher" else "never"
    return found


def test_adapter_fails_over_when_the_leader_dies(cluster_nodes):
    """Contract: a quorum queue's publisher and consumer carry on through the death of the node
    leading the queue; every message published is delivered (at least once)."""
    # The default vhost: the "orders" queues are this test's alone, and a vhost of its own
    # would cost two rabbitmqctl calls (an Erlang VM each, seconds on a busy machine).
    vhost, url = "/", cluster_nodes.vhost_url("/")
    broker = RabbitBroker(url, queue_type="quorum")
    try:
        broker.declare("orders")
        received = Collector(settle=lambda delivery: delivery.ack())
        broker.subscribe("orders", received, prefetch=5)
        sent = [f"before-{n}".encode() for n in range(10)]
        for body in sent:
            broker.publish("orders", body, priority=7)
        eventually(lambda: set(sent) <= set(received.bodies), 30, "deliveries before the kill")
        leader = cluster_nodes.leader_of("orders.q.flight", vhost)
        cluster_nodes.node(leader).kill9()
        after = [f"after-{n}".encode() for n in range(10)]
        for body in after:  # each waits for its confirm, reconnecting to a live node if need be
            broker.publish("orders", body, priority=n_priority(body))
        eventually(lambda: set(sent + after) <= set(received.bodies), 60, "deliveries after the kill")
        assert cluster_nodes.leader_of("orders.q.flight", vhost) != leader
    finally:
        broker.close()


def test_a_priority_4_task_overtakes_a_backlog_of_priority_0_tasks(cluster_nodes, tmp_path):
    """Task priority orders a module's whole backlog on quorum queues, as it does on a classic
    priority queue: the tasks are submitted while no replica runs (the backlog is on the broker,
    not in a module's hands), the urgent ones last; then one replica with one slot starts. The
    full run also submits a task of each priority 1 to 3, which must be claimed in their order."""
    url = cluster_nodes.vhost_url("/")  # the ranked queues are this test's alone, as "orders" above
    backlog = scale(120, 600)
    cluster = Cluster(tmp_path, url, RANKED_FLOWS, {"BATON_QUEUE_TYPE": "quorum", "BATON_THREAD_SLOTS": "1"})
    try:
        for _ in range(backlog):
            cluster.service.submit("ranked", {}, priority=0)
        urgent = {priority: cluster.service.submit("ranked", {}, priority=priority).task.TaskId
                  for priority in scale((4,), (1, 2, 3, 4))}
        cluster.start_module("ranked", registry="tests.support.ranked_commands:ranked")
        wait_until(lambda: all(first_claim(cluster.store.get(t)) is not None for t in urgent.values()), 300,
                   "the urgent tasks claimed")
        tasks = cluster.store.list_tasks(limit=backlog + 10)
        ranks = {priority: claim_rank(tasks, task_id) for priority, task_id in urgent.items()}
        print(f"\nCHAOS quorum claim rank by task priority, behind {backlog} tasks of priority 0: {ranks}")
        assert all(rank <= len(urgent) + 5 for rank in ranks.values()), ranks
        assert sorted(ranks, key=ranks.__getitem__) == sorted(urgent, reverse=True), ranks
    finally:
        cluster.stop_all()
        delete_quorum_queues(url, ["ranked", "baton.alarms"])


def delete_quorum_queues(url: str, queues: list[str]) -> None:
    """Every broker queue behind these queues of the port (bands and twin): the next test of the
    session starts on an empty vhost."""
    connection = pika.BlockingConnection(pika.URLParameters(url.split(",")[0]))
    try:
        channel = connection.channel()
        for queue in queues:
            for name in [*physical_queues(queue, "quorum"), *physical_queues(dead_letter_queue(queue), "quorum")]:
                channel.queue_delete(name)
    finally:
        connection.close()


def n_priority(body: bytes) -> int:
    """Half the messages on each band."""
    return 7 if int(body.rsplit(b"-", 1)[1]) % 2 else 2


def mixed_feeders(cluster: ChaosCluster, sandbox) -> list[Feeder]:
    """Every kind of flow at once, fed over the same seconds, so the faults hit each of them."""
    seconds = scale(10.0, 60.0)
    kinds = [  # task type, reduced count, full count, plans, the n-th task's own parameters
        ("chaos_demo", 30, 240, None, None),
        ("chaos_graph", 8, 60, GRAPH_PLANS, None),
        ("chaos_sub", 8, 60, SUB_PLANS, None),
        ("chaos_locked", 8, 60, LOCKED_PLANS, lambda n: {"pool": f"pool-{n % 2}"}),
        ("chaos_mysql", 6, 40, MYSQL_PLANS, lambda n: {"name": sandbox.name(f"q{n}")}),
    ]
    return [Feeder(cluster, scale(reduced, full), seconds, seed=41 + index, task_type=task_type, plans=plans,
                   params=params).start()
            for index, (task_type, reduced, full, plans, params) in enumerate(kinds)]


def assert_locks_given_back(cluster: ChaosCluster) -> None:
    """The keyed locks kept their limit, and the lock table holds only what the tasks whose
    rollback failed keep (until an operator ends them), with nobody left waiting."""
    tasks = cluster.tasks()
    assert lock_violations(tasks) == []
    kept = {t.TaskId for t in tasks if t.Lock is not None and t.TaskStatus is TaskStatus.ROLLBACK_FAILED}
    table = LockTable(open_lock_store(cluster.store_url))
    try:
        busy = table.list_locks(limit=1000)
    finally:
        table.close()
    assert [w.TaskId for lock in busy for w in lock.Waiters] == [], busy
    assert {h.TaskId for lock in busy for h in lock.Holders} == kept, busy


def test_leader_killed_with_kill_9_under_mixed_tasks(cluster_nodes, tmp_path):
    gap = scale(3.0, 10.0)
    with mariadb_sandbox() as sandbox, cluster_nodes.vhost() as (vhost, url):

        def queue_counts() -> dict[str, int]:
            return list_queue_messages(lambda *args: cluster_nodes.any_running().ctl(*args).stdout, vhost)

        cluster = ChaosCluster(tmp_path, url, {"BATON_QUEUE_TYPE": "quorum", **sandbox.env()}, ctl=queue_counts)
        inventory = add_host(cluster.store_url)
        try:
            cluster.start_standard()
            # Asked before the load starts: rabbitmqctl takes seconds on a busy machine.
            leader = cluster_nodes.leader_of("resource.q.flight", vhost)
            began = time.monotonic()
            feeders = mixed_feeders(cluster, sandbox)
            time.sleep(gap)
            downs = []  # (fault, the port of the node that went down, when): fail-over is timed from it
            downs.append((f"kill -9 of the leader {short(leader)}", port_of(cluster_nodes, leader), time.time()))
            cluster_nodes.node(leader).kill9()
            faults_over = time.monotonic()
            if FULL:
                time.sleep(gap)
                cluster_nodes.start_stopped()
                for node in list(cluster_nodes.nodes):  # a rolling restart: one node at a time
                    downs.append((f"restart of {short(node.node)}", node.port, time.time()))
                    node.restart()
                stopped = cluster_nodes.nodes[1]
                downs.append((f"{short(stopped.node)} stopped 60 s", stopped.port, time.time()))
                stopped.stop()
                time.sleep(60)
                stopped.start()
                faults_over = time.monotonic()
            for feeder in feeders:
                feeder.join()
            back = max(faults_over, *(feeder.finished_at for feeder in feeders))
            settle = cluster.settle(timeout=scale(180, 600), since=back)
            report = cluster.check()
            failovers = {fault: failover_seconds(cluster, port, at) for fault, port, at in downs}
            print("\nCHAOS fail-over per fault and process connection (seconds from the fault to the "
                  "connection's first opening on a live node):\n" + failover_table(failovers))
            faults = "; ".join(f"{fault} (fail-over {worst(found)})" for fault, found in failovers.items())
            record("quorum: leader kill -9 (3 nodes)", report, faults, settle, time.monotonic() - began)
            assert_clean(cluster, report)
            for fault, found in failovers.items():
                assert "never" not in found.values(), (fault, found)
            assert all(p.popen.poll() is None for p in cluster.procs.values()), "a process died with a node"
            assert_locks_given_back(cluster)
            assert_only_successes_own_anything(cluster, sandbox, inventory)
            tasks = cluster.tasks()
            children = Counter(t.TaskType for t in tasks if t.Parent is not None)
            assert children == {"chaos_demo": sum(t.TaskType == "chaos_sub" for t in tasks)}, children
        finally:
            cluster.stop_all()
            inventory.close()


def short(node: str) -> str:
    return node.split("@")[0]


def worst(found: dict[str, str]) -> str:
    """The longest timed fail-over of one fault, for the table row."""
    seconds = [float(v.removesuffix("s")) for v in found.values() if v.endswith("s")]
    return f"max {max(seconds):.1f}s over {len(found)} connections" if seconds else f"{len(found)} connections"
