"""`python -m modules.<name>`: run one module process, configured by BATON_* variables."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping

import structlog

from common.broker.factory import open_broker
from common.errors import EXIT_UNAVAILABLE, BatonError, ConfigError
from common.flows import load_flows
from common.logging import configure_logging
from common.tracing.setup import configure_tracing
from common.queues import module_queue
from common.runtime.module import BodyHandler, ModuleRuntime
from common.runtime.registry import load_registry
from common.stop_signals import stop_on_signals
from common.engine.changes import wire_records
from common.settings import Settings, load_settings
from common.store.factory import open_store
from common.store.side_stores import open_module_drains, open_module_registry
from common.store.tasks.port import TaskStore

log = structlog.get_logger(__name__)
ExtraConsumers = Callable[[Settings, TaskStore], Mapping[str, BodyHandler]]


def run_module(registry_ref: str, extra_consumers: ExtraConsumers | None = None) -> None:
    try:
        settings = load_settings()
        configure_logging(settings.log_format, settings.log_level)
        wire_records(settings)
        registry = load_registry(registry_ref)
        configure_tracing(f"baton-{registry.module}")  # OTEL_* (common/tracing/config.py)
        # The module refuses to start if flows.yaml asks it for a command it does not have.
        flows = load_flows(settings.flows_path, {registry.module: registry.names()}, all_modules=False)
    except ConfigError as exc:
        print(f"baton: {exc}", file=sys.stderr)
        sys.exit(2)
    try:
        # Only checks the indexes: creating them is OSS's (or `baton store init`'s) job.
        store = open_store(settings.store_url, timeout_seconds=settings.effective_store_timeout, indexes="check")
        broker = open_broker(settings.broker_url, settings.broker_heartbeat_seconds, **settings.broker_options)
        announcements = open_module_registry(settings.store_url, timeout_seconds=settings.effective_store_timeout, indexes="check")
        drains = open_module_drains(settings.store_url, timeout_seconds=settings.effective_store_timeout, indexes="check")
    except BatonError as exc:  # unreachable or refusing: say so plainly and let the supervisor retry
        print(f"baton: cannot start module {registry.module}: {exc}", file=sys.stderr)
        sys.exit(EXIT_UNAVAILABLE)
    runtime = ModuleRuntime(
        registry_ref=registry_ref,
        settings=settings,
        store=store,
        broker=broker,
        # Declare every queue this module may publish to, so a publish never finds none.
        queues_to_declare={module_queue(m) for m in flows.modules()},
        extra_consumers=extra_consumers(settings, store) if extra_consumers else None,
        announce_to=announcements,
        drains=drains,
    )
    stop = threading.Event()
    stop_on_signals(stop)
    # Served before "module started" is logged: whoever waits for that line may scrape at once.
    runtime.metrics.serve(settings.metrics_port)
    try:
        runtime.start()
    except BatonError as exc:
        print(f"baton: cannot start module {registry.module}: {exc}", file=sys.stderr)
        sys.exit(EXIT_UNAVAILABLE)
    while not stop.wait(1.0) and not runtime.failed.is_set():
        pass
    if runtime.failed.is_set():  # stuck thread commands: only a new process stops a hung call
        log.error("module stopping to be restarted", grace=settings.shutdown_grace_seconds)
    else:
        log.info("stop requested", grace=settings.shutdown_grace_seconds)
    clean = runtime.stop()
    broker.close()
    store.close()
    sys.exit(0 if clean and not runtime.failed.is_set() else 1)
