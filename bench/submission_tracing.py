"""Tracing of this process's own submissions, for the benchmarks that run the cluster with
tracing on (bench/tracing.py, bench/tracing_instructions.py): a provider like OSS's
(common.tracing.setup), its endpoint given, switched in for those runs only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tests.support.otlp_receiver import OtlpReceiver


@contextmanager
def submissions_traced(receiver: OtlpReceiver | None) -> Iterator[Callable[[bool], None]]:
    """Inside, the tasks this process submits carry a trace whose spans go to `receiver`; with
    none, tracing is off in this process. Off again on leaving, the provider's spans flushed.
    It yields a switch: `switch(False)` turns tracing off inside, `switch(True)` on again (a
    benchmark that submits to a traced and an untraced cluster in turn)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from common.tracing.exporter import OtlpExporter
    from common.tracing.scrub import ScrubbingProcessor
    from common.tracing.setup import install_provider

    provider = processor = None
    if receiver is not None:
        provider = TracerProvider()
        processor = ScrubbingProcessor([BatchSpanProcessor(OtlpExporter(endpoint=f"{receiver.endpoint}/v1/traces"))])
        provider.add_span_processor(processor)
    install_provider(provider, processor)
    try:
        yield lambda on: install_provider(provider if on else None, processor if on else None)
    finally:
        tracing_off()
        if provider is not None:
            provider.shutdown()


def tracing_off() -> None:
    """No tracer provider in this process: the hooks take their off path."""
    from common.tracing.setup import install_provider

    install_provider(None, None)
