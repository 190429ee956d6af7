"""Whether to trace, and how, from the standard OTEL_* variables: a pure reading of a mapping.

Tracing is off unless an exporter is asked for: OTEL_TRACES_EXPORTER names one (`otlp` or
`console`), or an OTLP endpoint is given (OTEL_EXPORTER_OTLP_ENDPOINT or
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, which imply `otlp`). OTEL_TRACES_EXPORTER=none and
OTEL_SDK_DISABLED=true turn it off whatever else is set. The SDK reads the rest itself (the
sampler, the resource, the batch processor's and the exporter's own settings); what it would only
warn about and ignore (an unknown exporter, sampler or protocol) is refused here, naming the
variable and its value, so a typo never leaves a deployment silently untraced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from common.errors import ConfigError

EXPORTERS = ("otlp", "console")
SAMPLERS = (
    "always_on", "always_off", "traceidratio",
    "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio",
)
PROTOCOLS = ("http/protobuf",)  # the OTLP/HTTP exporter: no gRPC one is installed


@dataclass(frozen=True)
class TracingConfig:
    exporters: tuple[str, ...]


def tracing_config(environ: Mapping[str, str]) -> TracingConfig | None:
    """What to export to, or None: tracing is off. Raises ConfigError for a value the SDK would
    ignore with a warning."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    named = [e.strip().lower() for e in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if e.strip()]
    unknown = [e for e in named if e not in (*EXPORTERS, "none")]
    if unknown:
        raise ConfigError(f"OTEL_TRACES_EXPORTER={environ['OTEL_TRACES_EXPORTER']!r}: {unknown[0]!r} is not an "
                          f"exporter baton has; use one of {', '.join(EXPORTERS)} or none")
    if "none" in named:
        return None
    endpoint = any(environ.get(k, "").strip() for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    exporters = tuple(named) or (("otlp",) if endpoint else ())
    if not exporters:
        return None
    _check_choice(environ, "OTEL_TRACES_SAMPLER", SAMPLERS)
    if "otlp" in exporters:
        for name in ("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"):
            _check_choice(environ, name, PROTOCOLS)
    ratio = environ.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
    if ratio and environ.get("OTEL_TRACES_SAMPLER", "").strip().lower().endswith("traceidratio"):
        try:
            valid = 0.0 <= float(ratio) <= 1.0
        except ValueError:
            valid = False
        if not valid:
            raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG={ratio!r}: a ratio between 0 and 1 is expected")
    return TracingConfig(exporters)


def _check_choice(environ: Mapping[str, str], name: str, choices: tuple[str, ...]) -> None:
    value = environ.get(name, "").strip()
    if value and value.lower() not in choices:
        raise ConfigError(f"{name}={value!r} is not supported; use one of {', '.join(choices)}")
