"""Prometheus metrics of a module process and of the sweeper, on a registry of their own.

Each process serves its registry on BATON_METRICS_PORT (0: not served). Names are prefixed
`baton_`; OSS has its own set (oss/api/metrics.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

if TYPE_CHECKING:
    from common.engine.document import Task

STEP_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)


class RuntimeMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.step_seconds = Histogram(
            "baton_step_duration_seconds", "How long one attempt of a command took",
            ["module", "command", "phase", "outcome"], registry=r, buckets=STEP_SECONDS_BUCKETS,
        )
        self.retries = Counter(
            "baton_step_retries_total", "Attempts that failed and were scheduled again",
            ["module", "command", "phase"], registry=r,
        )
        self.timeouts = Counter(
            "baton_step_timeouts_total", "Attempts stopped at their timeout",
            ["module", "command", "phase"], registry=r,
        )
        self.tasks_finished = Counter(
            "baton_tasks_finished_total", "Tasks that reached a final status here",
            ["task_type", "status"], registry=r,
        )
        self.dead_letters = Counter(
            "baton_dead_letters_total", "Messages sent to a dead-letter queue", ["module"], registry=r,
        )
        self.deliveries_dropped = Counter(
            "baton_deliveries_dropped_total", "Duplicate or stale deliveries refused by the claim",
            ["module"], registry=r,
        )
        self.outbox_lag = Histogram(
            "baton_outbox_publish_lag_seconds", "From an outbox entry falling due to its publish",
            registry=r, buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120),
        )
        self.sweeper_actions = Counter(
            "baton_sweeper_actions_total", "What the sweeper healed",
            ["action"], registry=r,  # lease_lapsed | redispatched | relayed
        )

    def count_task_end(self, task: Task) -> None:
        """A task a write of this process ended (common.store.tasks.ended)."""
        self.tasks_finished.labels(task.TaskType, task.TaskStatus.name).inc()

    def serve(self, port: int, address: str = "0.0.0.0") -> None:
        """Serve /metrics on `port` from a daemon thread (prometheus_client's own server)."""
        if port:
            start_http_server(port, addr=address, registry=self.registry)
