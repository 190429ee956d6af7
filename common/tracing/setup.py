"""Turning tracing on for one process: the SDK's provider, its exporters, its resource.

Everything the OTEL_* variables configure is left to the SDK (sampler, resource attributes,
batch sizes, endpoint, headers, timeouts): baton adds only what it knows, a default
`service.name` (`baton-oss`, `baton-<module>`, ...) and `service.instance.id`, each unless
the variables already set it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

import structlog

from common.tracing import state
from common.tracing.config import tracing_config

log = structlog.get_logger(__name__)


def configure_tracing(service_name: str, instance_id: str | None = None,
                      environ: Mapping[str, str] = os.environ) -> bool:  # fmt: skip
    """Trace this process if the variables ask for it; True when it does. Raises ConfigError
    for a value the SDK would ignore. Without the SDK installed the process runs untraced,
    with a warning that says how to install it."""
    config = tracing_config(environ)
    if config is None:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning("tracing asked for but the OpenTelemetry SDK is not installed: running untraced",
                    hint="pip install 'baton[tracing]'", exporters=",".join(config.exporters))
        return False
    from common.tracing.scrub import ScrubbingProcessor

    resource = _resource(Resource, service_name, instance_id or f"{socket.gethostname()}:{os.getpid()}")
    provider = TracerProvider(resource=resource)
    exporters = [_exporter(name) for name in config.exporters]
    processor = ScrubbingProcessor([BatchSpanProcessor(exporter) for exporter in exporters])
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    install_provider(provider, processor, step_records=all(getattr(e, "takes_step_records", False) for e in exporters))
    log.info("tracing on", exporters=",".join(config.exporters), service=resource.attributes.get("service.name"))
    return True


def install_provider(provider: Any, processor: Any = None, step_records: bool = False) -> None:
    """Make `provider` this process's (None: off); `processor` takes the spans built outside its
    tracer (a step's, a command process's): the provider's own. `step_records`: every exporter
    behind it takes a step's spans as one record (common.tracing.step_record); otherwise they are
    handed over as the SDK's spans. The benchmark and the tests switch providers with it."""
    if provider is None:
        state.install(None, None)
        return
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from common.tracing.scrub import ScrubbingProcessor

    emit = processor.on_end if processor is not None else None
    steps = processor.steps_emit() if isinstance(processor, ScrubbingProcessor) else emit
    state.install(provider.get_tracer(state.SCOPE), emit, provider.resource, InstrumentationScope(state.SCOPE),
                  steps if step_records else None)


def shutdown_tracing() -> None:
    """Export what is still buffered (a clean stop); the SDK also does it at exit."""
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if hasattr(provider, "shutdown"):
        provider.shutdown()


def _resource(resource_class: type, service_name: str, instance_id: str | None) -> object:
    detected = resource_class.create()  # OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
    ours: dict[str, str | int] = {}
    if str(detected.attributes.get("service.name", "")).startswith("unknown_service"):
        ours["service.name"] = service_name
    if instance_id is not None and "service.instance.id" not in detected.attributes:
        ours["service.instance.id"] = instance_id
    if "process.pid" not in detected.attributes:  # which replica made a span
        ours["process.pid"] = os.getpid()
    return detected.merge(resource_class(ours)) if ours else detected


def _exporter(name: str) -> object:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    from common.tracing.exporter import OtlpExporter

    return OtlpExporter()  # its endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_*
