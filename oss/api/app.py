"""create_app: the FastAPI app of OSS, built from settings (no import-time state).

Passing `store` / `broker` shares ones the caller owns (tests, an embedded deployment); the app
opens its own from the settings otherwise, and closes only what it opened. While the app runs
(its lifespan) it declares the queues the flows need and, unless BATON_OSS_SWEEPER=false, runs
the sweeper and outbox relay in a thread: every OSS replica may, the sweeper's store lock lets
one sweep at a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import structlog
from fastapi import Depends, FastAPI

from common.broker.factory import open_broker
from common.background import BACKGROUND_MARGIN_SECONDS, join_all
from common.broker.port import Broker
from common.errors import BatonError, BrokerError
from common.flows import FlowCatalog, load_flows
from common.store.factory import open_store
from common.store.side_stores import open_module_registry
from common.store.side.modules import live_modules
from common.store.tasks.port import TaskStore
from oss.api.access import check_task_types
from oss.api.auth import authenticate_first
from oss.api.context import ApiContext
from oss.api.errors import install_error_handlers
from common.store.tasks.ended import count_ends
from oss.api.callback_gate import CallbackRateGate
from oss.api.limits import BodyLimit
from oss.api.metrics import ApiMetrics, MetricsMiddleware
from oss.api.openapi_doc import install_openapi
from oss.api.query import known_query_only
from oss.api.routers import (
    access, actions, alarms, bulk, callbacks, events, health, hosts, items, locks, migrations, module_drains, modules,
    schedules, task_types, tasks,
)
from oss.console import mount_console
from oss.services.tasks import TaskService
from oss.settings import OssSettings
from common.module_hooks import module_hooks
from oss.wiring import build_sweeper
from oss.api.parts import close_parts
from common.tracing.http_server import TracingMiddleware, framework_telemetry_off

log = structlog.get_logger(__name__)
API_PREFIX = "/api/v1"


def warn_of_modules_not_running(settings: OssSettings, flows: FlowCatalog, now: float) -> None:
    """A module flows.yaml names may start after OSS, so start-up does not refuse it; but a typo
    (`dnz`) must not pass in silence: say which are not running now. The sweeper raises an alarm
    if a step then waits for one past BATON_UNSERVED_ALARM_SECONDS."""
    try:
        registry = open_module_registry(settings.store_url)
        try:
            live = live_modules(registry.registrations(), now, settings.module_ttl)
        finally:
            registry.close()
    except BatonError as exc:
        log.warning("could not read the module announcements", error=str(exc))
        return
    for module in sorted(flows.modules() - set(live)):
        log.warning("flows.yaml names a module that is not running (yet)", module=module,
                    running=", ".join(sorted(live)) or "none")  # fmt: skip


def create_app(
    settings: OssSettings,
    store: TaskStore | None = None,
    broker: Broker | None = None,
    *,
    flows: FlowCatalog | None = None,
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    for load in module_hooks("inventory_settings"):  # the resource module's, read by /api/v1/hosts:
        load()  # a bad BATON_RESOURCE_* value stops OSS here, not at the first request for a host
    flows = flows or load_flows(settings.flows_path)
    check_task_types(settings.tokens, set(flows.task_types))  # before anything is opened: nothing to close
    owned = []
    if store is None:
        store = open_store(settings.store_url, timeout_seconds=settings.effective_store_timeout)
        owned.append(store)
    if broker is None:
        broker = open_broker(settings.broker_url, settings.broker_heartbeat_seconds, **settings.broker_options)
        owned.append(broker)
    service = TaskService(store, broker, flows, settings, clock)
    metrics = ApiMetrics()
    count_ends(store, metrics.count_task_end)  # before its sweeper (in lifespan) could name its own
    context = ApiContext(settings, store, broker, flows, service, metrics, settings.tokens, clock, service.items)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            service.declare_queues()
        except BrokerError as exc:  # /readyz says so; the relay publishes once it is back
            log.warning("could not declare the queues", error=str(exc))
        warn_of_modules_not_running(settings, flows, clock())
        stop = threading.Event()
        background: list[threading.Thread | None] = []
        if settings.oss_sweeper:
            sweeper = threading.Thread(
                target=build_sweeper(settings, store, broker, service).run, args=(stop,),
                name="baton-sweeper", daemon=True,
            )  # fmt: skip
            sweeper.start()
            background.append(sweeper)
            # The modules' own jobs (the mysql reconciler: BATON_RECONCILE_INTERVAL_SECONDS).
            background += [start(settings, store, stop) for start in module_hooks("background_job")]
        if not context.tokens:
            log.warning("BATON_API_TOKENS is empty: every API call but health will get 401")
        try:
            yield
        finally:
            stop.set()
            # Every thread that uses the store ends before it closes (common.background).
            joined = join_all(background, settings.shutdown_grace_seconds + BACKGROUND_MARGIN_SECONDS)
            service.close()
            close_parts(app.state)  # what the routers opened on first use
            for part in owned if joined else ():
                part.close()

    app = FastAPI(
        title="baton",
        version="1",
        summary="Multi-step control-plane operations with rollback",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
        lifespan=lifespan,
        dependencies=[Depends(known_query_only)],
        **framework_telemetry_off(FastAPI),  # baton's own request spans instead (common/tracing/http_server.py)
    )
    app.state.baton = context
    install_error_handlers(app, before_validation=authenticate_first)
    for module in (tasks, items, events, actions, callbacks, bulk, migrations, task_types, alarms, hosts, schedules,
                   modules, module_drains, locks, access, health):
        app.include_router(module.router)
    health.add_metrics_route(app, settings.metrics_public)
    install_openapi(app, flows, settings.input_limits.max_string)  # the task types' parameter schemas, and what every route answers
    mount_console(app)  # the web console at /console/, and / redirects there
    # The last added runs first: metrics see every answer, the 413s of the body limit included.
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(CallbackRateGate)  # the callback route's rate, before its body is read or checked
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(TracingMiddleware)  # outermost: a request's span holds all of it
    return app
