"""Quorum queues on a three-node private RabbitMQ cluster: the adapter's fail-over between
nodes, and the node leading the queues killed with kill -9 under mixed tasks.

Every process is given the three nodes (BATON_BROKER_URL, comma-separated) and
BATON_QUEUE_TYPE=quorum. The reduced run (normal test run) kills the leader once; the full run
(`make chaos`) also restarts all three nodes one after another and stops one for a minute.
Fail-over times are printed per process: from the kill to its first connection to another node,
for the processes that had one on the dead node (the others never lost theirs).
"""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from common.broker.rabbitmq import RabbitBroker
from tests.chaos.evidence import assert_clean, log_events
from tests.chaos.harness import ChaosCluster, Feeder
from tests.chaos.plans import FULL, GRAPH_PLANS, scale
from tests.chaos.private_rabbit import list_queue_messages
from tests.chaos.report import record
from tests.contract.broker_fixtures import Collector, eventually

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.timeout(2400 if FULL else 900)]


def port_of(cluster_nodes, node_name: str) -> int:
    return cluster_nodes.node(node_name).port


def failover_seconds(cluster: ChaosCluster, dead_port: int, killed_at: float) -> dict[str, str]:
    """Per process, for each of its connections that was on the dead node: seconds from the kill
    to its first connection after it. A consumer reconnects at once; the publisher connection
    only when it has something to publish ("at next publish" if it had nothing since)."""
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
    with cluster_nodes.vhost() as (vhost, url):
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


def n_priority(body: bytes) -> int:
    """Half the messages on each band."""
    return 7 if int(body.rsplit(b"-", 1)[1]) % 2 else 2


def test_leader_killed_with_kill_9_under_mixed_tasks(cluster_nodes, tmp_path):
    count, graph_count, gap = scale(40, 240), scale(10, 60), scale(3.0, 10.0)
    with cluster_nodes.vhost() as (vhost, url):

        def queue_counts() -> dict[str, int]:
            return list_queue_messages(lambda *args: cluster_nodes.any_running().ctl(*args).stdout, vhost)

        cluster = ChaosCluster(tmp_path, url, {"BATON_QUEUE_TYPE": "quorum"}, ctl=queue_counts)
        try:
            cluster.start_standard()
            # Asked before the load starts: rabbitmqctl takes seconds on a busy machine.
            leader = cluster_nodes.leader_of("resource.q.flight", vhost)
            dead_port = port_of(cluster_nodes, leader)
            began = time.monotonic()
            lines = Feeder(cluster, count, seconds=scale(15.0, 60.0), seed=41).start()
            graphs = Feeder(cluster, graph_count, seconds=scale(15.0, 60.0), seed=42, task_type="chaos_graph",
                            plans=GRAPH_PLANS).start()
            time.sleep(gap)
            killed_at = time.time()
            cluster_nodes.node(leader).kill9()
            faults = f"kill -9 of the queues' leader {leader.split('@')[0]}"
            if FULL:
                time.sleep(gap)
                cluster_nodes.start_stopped()
                for node in list(cluster_nodes.nodes):  # a rolling restart: one node at a time
                    node.restart()
                stopped = cluster_nodes.nodes[1]
                stopped.stop()
                time.sleep(60)
                stopped.start()
                faults += "; rolling restart of all three; one node stopped for 60 s"
            lines.join()
            graphs.join()
            back = max(lines.finished_at, graphs.finished_at)
            settle = cluster.settle(timeout=scale(180, 600), since=back)
            report = cluster.check()
            failover = failover_seconds(cluster, dead_port, killed_at)
            print(f"\nCHAOS fail-over after the leader's kill -9, per process: {failover}")
            record("quorum: leader kill -9 (3 nodes)", report, f"{faults}; fail-over {failover}", settle,
                   time.monotonic() - began)
            assert_clean(cluster, report)
            assert "never" not in failover.values(), failover
            assert all(p.popen.poll() is None for p in cluster.procs.values()), "a process died with a node"
        finally:
            cluster.stop_all()
