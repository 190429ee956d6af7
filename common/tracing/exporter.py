"""The OTLP/HTTP exporter baton's processes use: the SDK's (its endpoint, headers, timeout,
compression, retries and TLS all from the OTEL_EXPORTER_OTLP_* variables, as documented by
OpenTelemetry), with baton's encoder (common/tracing/otlp_encoding.py) in place of the SDK's:
the same request, a fraction of the CPU, and it takes a step's spans as one record.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from common.tracing.otlp_encoding import encode_request

_logger = logging.getLogger(__name__)


class OtlpExporter(OTLPSpanExporter):
    """Writes records of a step's spans (common.tracing.step_record) as well as the SDK's spans."""

    takes_step_records = True

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            body = encode_request(spans)
        except Exception as error:  # a span the encoder cannot write: this batch is lost, not the process
            _logger.error("Failed to encode span batch: %s", type(error).__name__)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if self._client.export(body).success else SpanExportResult.FAILURE
