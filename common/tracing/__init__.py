"""OpenTelemetry traces: one trace per task, across OSS, the modules and their command processes.

Off unless an exporter is configured by the standard OTEL_* variables (`config.py`); off, no span
object is made anywhere. The API package (`opentelemetry-api`) is all the code needs to import;
the SDK and the OTLP exporter come with the `tracing` extra. The task document carries its trace
context (`carrier.TraceContext`), and so does every step message, so a redelivery or a take-over
continues the same trace.

Design: docs/design/tracing.md; what a user sees: docs/guide/tracing.md.
"""
