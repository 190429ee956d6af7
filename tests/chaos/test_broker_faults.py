"""The broker itself dies: restarted cleanly twice, then killed with kill -9 and started again.

On a private RabbitMQ node (tests.chaos.private_rabbit), never the shared one. Tasks keep being
submitted while the broker is down: OSS's publish fails, the task is stored anyway, and the
outbox relay publishes step 0 once the broker is back.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from tests.chaos.evidence import PortWatch, assert_clean, reconnect_seconds
from tests.chaos.harness import ChaosCluster, Feeder, delete_queues
from tests.support.cluster import STATE_DEADLINE
from tests.chaos.plans import ALL_QUEUES, FULL, GRAPH_PLANS, SCENARIO_TIMEOUT, scale
from tests.chaos.report import record

pytestmark = [pytest.mark.chaos, pytest.mark.slow, pytest.mark.timeout(SCENARIO_TIMEOUT)]


@contextlib.contextmanager
def cluster_on(rabbit, tmp_path):
    # The node is this module's own: its default vhost, emptied of a previous scenario's queues,
    # serves as well as a vhost of its own, and spares two rabbitmqctl calls (an Erlang VM each).
    delete_queues(rabbit.url, ALL_QUEUES)
    cluster = ChaosCluster(tmp_path, rabbit.url, ctl=lambda: rabbit.queue_messages("/"))
    try:
        yield cluster
    finally:
        cluster.stop_all()


def wait_reconnected(cluster, reachable_at: float, timeout: float = 60) -> float:
    """The worst module's reconnect time after the broker became reachable (printed, and asserted
    only to have happened: speed is reported, never asserted)."""
    deadline = time.monotonic() + max(timeout, STATE_DEADLINE)
    while True:
        seconds = reconnect_seconds(cluster, reachable_at)
        if all(s != float("inf") for s in seconds.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    print(f"\nCHAOS reconnect after the broker was reachable: {seconds}")
    assert all(s != float("inf") for s in seconds.values()), f"a module never reconnected: {seconds}"
    return max(seconds.values())


@pytest.mark.skipif(not FULL, reason="make chaos only: every run has the harsher broker kill -9 below")
def test_broker_restarted_twice_during_a_run(private_rabbit, tmp_path):
    restarts, count, gap = 2, scale(40, 300), scale(2.0, 8.0)
    with cluster_on(private_rabbit, tmp_path) as cluster:
        cluster.start_standard()
        began = time.monotonic()
        feeder = Feeder(cluster, count, seconds=scale(20.0, 60.0), seed=21).start()
        downtime, reconnects = 0.0, []
        for _ in range(restarts):
            time.sleep(gap)
            stopped = private_rabbit.stop()
            watch = PortWatch(private_rabbit.port)
            downtime += stopped + private_rabbit.start()
            reconnects.append(wait_reconnected(cluster, watch.wait()))
        back = time.monotonic()
        feeder.join()
        settle = cluster.settle(timeout=scale(120, 300), since=max(back, feeder.finished_at))
        report = cluster.check()
        record("broker restarted x2", report, f"{restarts} clean restarts ({downtime:.0f}s down); "
               f"modules reconnected {max(reconnects):.1f}s after the broker was reachable (worst)", settle,
               time.monotonic() - began)  # fmt: skip
        assert_clean(cluster, report)
        assert all(p.popen.poll() is None for p in cluster.procs.values()), "a process died with the broker"


def test_broker_killed_with_kill_9_and_started_again(private_rabbit, tmp_path):
    count, gap, down = scale(40, 300), scale(2.0, 10.0), scale(1.0, 5.0)
    with cluster_on(private_rabbit, tmp_path) as cluster:
        cluster.start_standard()
        began = time.monotonic()
        feeder = Feeder(cluster, count, seconds=scale(10.0, 40.0), seed=22).start()
        # Parallel flows too: a diamond with a fan-out branch, fed alongside.
        graphs = Feeder(cluster, scale(15, 100), seconds=scale(10.0, 40.0), seed=23, task_type="chaos_graph",
                        plans=GRAPH_PLANS).start()
        time.sleep(gap)
        killed = time.monotonic()
        private_rabbit.kill9()
        watch = PortWatch(private_rabbit.port)
        time.sleep(down)
        private_rabbit.start()
        reconnected = wait_reconnected(cluster, watch.wait())
        back = time.monotonic()
        downtime = back - killed
        feeder.join()
        graphs.join()
        settle = cluster.settle(timeout=scale(120, 300), since=max(back, feeder.finished_at, graphs.finished_at))
        report = cluster.check()
        record("broker kill -9 (line + parallel flows)", report, f"kill -9 of beam.smp ({downtime:.0f}s down); modules reconnected "
               f"{reconnected:.1f}s after the broker was reachable (worst)", settle, time.monotonic() - began)
        assert_clean(cluster, report)
        assert all(p.popen.poll() is None for p in cluster.procs.values()), "a process died with the broker"
