"""The OTLP/HTTP exporter baton's processes use: the SDK's (its endpoint, headers, timeout,
compression, retries and TLS all from the OTEL_EXPORTER_OTLP_* variables, as documented by
OpenTelemetry), with baton's encoder (common/tracing/otlp_encoding.py) in place of the SDK's:
the same request, a fraction of the CPU, and it takes a step's spans as one record.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from requests.utils import get_netrc_auth

from common.tracing.otlp_encoding import encode_request

_logger = logging.getLogger(__name__)


class OtlpExporter(OTLPSpanExporter):
    """Writes records of a step's spans (common.tracing.step_record) as well as the SDK's spans."""

    takes_step_records = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The SDK's requests session, where its transport keeps it; should a later SDK keep it
        # elsewhere, the session reads the environment per request as before (slower, as right).
        session = getattr(getattr(self._client, "_transport", None), "_session", None)
        if isinstance(session, requests.Session):
            read_environment_once(session, self._endpoint)

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            body = encode_request(spans)
        except Exception as error:  # a span the encoder cannot write: this batch is lost, not the process
            _logger.error("Failed to encode span batch: %s", type(error).__name__)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if self._client.export(body).success else SpanExportResult.FAILURE


def read_environment_once(session: requests.Session, url: str) -> None:
    """In place: what `session` would read from the environment for each request to `url`, read
    now and kept: the proxy (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY; none when NO_PROXY names the
    host), a CA bundle (REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) and .netrc credentials. A session
    that trusts the environment reads every variable of it again for each request, about a third
    of an export's Python calls; the exporter's endpoint never changes, so neither would the
    answer (but for a variable changed later in the process: docs/guide/tracing.md)."""
    if not session.trust_env:
        return
    # As Session.request asks it (no proxies, stream or verify of the request's own): the same result.
    settings = session.merge_environment_settings(url, {}, None, None, None)
    session.proxies, session.verify = settings["proxies"], settings["verify"]
    if session.auth is None:
        session.auth = get_netrc_auth(url)
    session.trust_env = False
