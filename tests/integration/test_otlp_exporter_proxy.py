"""baton's OTLP/HTTP exporter (common/tracing/exporter.py) behind a proxy the environment names,
as in a network where only a proxy reaches the collector: a real forward proxy and a real OTLP
receiver on this machine. The proxy variables are read when the exporter is made (the process's
start, docs/guide/tracing.md): a change later in the process changes nothing."""

from __future__ import annotations

import pytest

from common.tracing.exporter import OtlpExporter
from tests.support.http_proxy import HttpProxy
from tests.support.otlp_receiver import OtlpReceiver

PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
                   "NO_PROXY", "no_proxy", "REQUEST_METHOD")


@pytest.fixture
def network(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    receiver, proxy = OtlpReceiver().start(), HttpProxy().start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    yield receiver, proxy
    proxy.stop()
    receiver.stop()


def _provider():
    """A provider whose every span goes out through a new exporter, made now, as it ends."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(OtlpExporter()))
    return provider


def _export_one(provider, name: str) -> None:
    with provider.get_tracer("proxy-test").start_as_current_span(name):
        pass


def test_the_exporter_goes_through_the_proxy_named_when_it_was_made(network, monkeypatch):
    receiver, proxy = network
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    provider = _provider()
    _export_one(provider, "through the proxy")
    monkeypatch.delenv("HTTP_PROXY")  # later in the process: read at the start only
    _export_one(provider, "still through the proxy")
    provider.shutdown()
    assert [s.name for s in receiver.all()] == ["through the proxy", "still through the proxy"]
    assert proxy.urls() == [f"{receiver.endpoint}/v1/traces"] * 2


def test_no_proxy_naming_the_collector_s_host_sends_it_straight(network, monkeypatch):
    receiver, proxy = network
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    provider = _provider()
    _export_one(provider, "straight")
    monkeypatch.delenv("NO_PROXY")  # later in the process: read at the start only
    _export_one(provider, "still straight")
    provider.shutdown()
    assert [s.name for s in receiver.all()] == ["straight", "still straight"]
    assert proxy.urls() == []
