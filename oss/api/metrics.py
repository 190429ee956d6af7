"""Prometheus metrics of one API app, in a registry of its own (never the process-global one:
two apps in one process, as in tests, would otherwise share and clash over their counters).

Requests are labelled by route TEMPLATE (/api/v1/tasks/{task_id}), not by path, so the number of
series stays bounded whatever ids clients send; paths no route matches share one label.
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "(unmatched)"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
CONTENT_TYPE = CONTENT_TYPE_LATEST


class ApiMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.tasks_created = Counter(
            "baton_tasks_created", "Tasks created through the API", ["task_type"],
            registry=self.registry,
        )  # fmt: skip
        self.requests = Counter(
            "baton_api_requests", "API requests answered", ["method", "route", "status"],
            registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "baton_api_request_seconds", "Time to answer an API request", ["method", "route"],
            registry=self.registry,
        )  # fmt: skip
        # As a module's and the sweeper's: the tasks a write of this process ended (an operator's
        # action, an approval, a callback, its sweeper's timeouts; common.store.tasks.ended).
        self.tasks_finished = Counter(
            "baton_tasks_finished_total", "Tasks that reached a final status here", ["task_type", "status"],
            registry=self.registry,
        )  # fmt: skip

    def count_task_end(self, task: Any) -> None:
        self.tasks_finished.labels(task.TaskType, task.TaskStatus.name).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: ApiMetrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def tracked_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, tracked_send)
        finally:
            route = getattr(scope.get("route"), "path", UNMATCHED)
            method = scope.get("method", "") if scope.get("method") in _METHODS else "OTHER"
            self.metrics.requests.labels(method, route, str(status)).inc()
            self.metrics.latency.labels(method, route).observe(time.perf_counter() - started)
