"""In which order a module claims its backlog, on classic and on quorum queues (BATON_QUEUE_TYPE).

Two backlogs of `backlog` priority-0 tasks, each followed by one task of each priority 1 to 4:
- first steps: the tasks are submitted while no replica of their module runs, then one replica
  with one slot starts; a rank is the place of that task's first claim among all of them;
- steps in flight: two-step tasks whose first steps run (in submission order) while no replica of
  the second step's module runs, then one replica with one slot starts; a rank is the place of
  the second step's claim.
Printed: the rank of each urgent task, highest priority first. A classic priority queue hands out
its highest first, so there the urgent tasks come first; so they should on quorum queues.
One RabbitMQ node: the order is the layout's, not replication's (tests/chaos/test_quorum_cluster.py
checks the first on three nodes).
"""

from __future__ import annotations

import time
from pathlib import Path

from common.engine.states import FINAL_STATUSES
from tests.support.claim_order import claim_rank, first_claim
from tests.support.cluster import Cluster, wait_until
from tests.support.ranked_commands import RANKED_FLOWS

QUEUE_TYPES = ("classic", "quorum")
URGENT = (4, 3, 2, 1)
REGISTRY = "tests.support.ranked_commands:{}"


def priority_rows(workdir: Path, amqp_url: str, backlog: int) -> list[tuple[str, str, str]]:
    rows = []
    for queue_type in QUEUE_TYPES:
        for what, measure in (("first steps", _first_steps), ("steps in flight", _steps_in_flight)):
            ranks = measure(workdir / f"{queue_type}-{what.replace(' ', '-')}", amqp_url, queue_type, backlog)
            shown = ", ".join(f"p{priority} {rank}" for priority, rank in ranks.items())
            rows.append((f"claim rank behind {backlog} priority-0 tasks, {what}, {queue_type} queues",
                         shown, f"of {backlog + len(URGENT)}; one replica, one slot"))
    return rows


def _cluster(workdir: Path, amqp_url: str, queue_type: str) -> Cluster:
    workdir.mkdir(parents=True, exist_ok=True)
    return Cluster(workdir, amqp_url, RANKED_FLOWS, extra_env={
        "BATON_FAULT_INJECTION": "0", "BATON_QUEUE_TYPE": queue_type, "BATON_THREAD_SLOTS": "1",
    })


def _submit(cluster: Cluster, task_type: str, backlog: int) -> dict[int, str]:
    for _ in range(backlog):
        cluster.service.submit(task_type, {}, priority=0)
    return {priority: cluster.service.submit(task_type, {}, priority=priority).task.TaskId for priority in URGENT}


def _ranks(cluster: Cluster, urgent: dict[int, str], cursor: int, backlog: int) -> dict[int, int]:
    wait_until(lambda: all(first_claim(cluster.store.get(t), cursor) is not None for t in urgent.values()), 600,
               "the urgent tasks claimed")
    tasks = cluster.store.list_tasks(limit=backlog + 100)
    return {priority: claim_rank(tasks, task_id, cursor) for priority, task_id in urgent.items()}


def _first_steps(workdir: Path, amqp_url: str, queue_type: str, backlog: int) -> dict[int, int]:
    cluster = _cluster(workdir, amqp_url, queue_type)
    try:
        urgent = _submit(cluster, "ranked", backlog)
        cluster.start_module("ranked", registry=REGISTRY.format("ranked"))
        return _ranks(cluster, urgent, 0, backlog)
    finally:
        _stop(cluster)


def _steps_in_flight(workdir: Path, amqp_url: str, queue_type: str, backlog: int) -> dict[int, int]:
    cluster = _cluster(workdir, amqp_url, queue_type)
    try:
        cluster.start_module("ranked", registry=REGISTRY.format("ranked"))
        urgent = _submit(cluster, "ranked_two", backlog)
        every = backlog + len(URGENT)
        wait_until(lambda: _first_steps_done(cluster) >= every, 600, "every first step done")
        cluster.start_module("ranked_next", registry=REGISTRY.format("ranked_next"))
        return _ranks(cluster, urgent, 1, backlog)
    finally:
        _stop(cluster)


def _first_steps_done(cluster: Cluster) -> int:
    return sum(1 for task in cluster.store.list_tasks(limit=100_000)
               if any(e.Event == "step_succeeded" and e.Cursor == 0 for e in task.History))


def _stop(cluster: Cluster) -> None:
    """Let what is left run out (the next run uses the same queues), then stop."""
    wait_until(lambda: all(t.TaskStatus in FINAL_STATUSES for t in cluster.store.list_tasks(limit=100_000)), 600,
               "every task ended")
    cluster.stop_all()
    time.sleep(0.5)


if __name__ == "__main__":  # the rows alone: python -m bench.priority_order
    import os
    import tempfile

    from common.logging import configure_logging
    from tests.support.vhosts import rabbitmq_vhost

    configure_logging(level="warning")
    with rabbitmq_vhost("baton-bench-priority") as url, tempfile.TemporaryDirectory() as tmp:
        found = priority_rows(Path(tmp), url, int(os.environ.get("BATON_BENCH_PRIORITY_TASKS", "120")))
    for name, value, note in found:
        print(f"  {name:<80}  {value:>24}  {note}")
