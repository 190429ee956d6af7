"""Whether this process traces: the tracer every baton span is made with, or None (off).

Set once by the entry point (`setup.configure_tracing`), as logging is: a command's own spans go
through OpenTelemetry's global provider, so the process has one provider whatever we do, and the
runtime's spans must go to the same exporters. Kept here as well, so that "off" costs one
attribute read and no OpenTelemetry call, and a test or the benchmark can switch a provider in
and out within one process (the global one can be set only once).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCOPE = "baton"  # the instrumentation scope of baton's own spans (a command's are scrubbed)

tracer: Any = None  # opentelemetry.trace.Tracer while tracing is on
# Where a finished span built outside the SDK's tracer goes (a step's spans, a command process's
# carried back over its pipe): the provider's span processor. None while tracing is off.
emit: Callable[[Any], None] | None = None
# Where a step's spans go, as one record (its attempt: common.tracing.step_record): the processor
# itself when every exporter writes such records directly, else a hand-over that builds the
# SDK's spans from it first. None while tracing is off.
emit_steps: Callable[[Any], None] | None = None
resource: Any = None  # the provider's Resource: what every span built here says about its process
scope: Any = None  # InstrumentationScope("baton")
# Every (resource, scope) a provider installed here had, and the number of the current one's: a
# step's record names its resource and scope by that number, which the garbage collector need not
# follow (common/tracing/attempts.py), as it would an object.
origins: list[tuple[Any, Any]] = [(None, None)]
origin = 0
# A step's record as the SDK's spans: common.tracing.step_record.readable, set when that module
# is imported (by the attempts that make records; it is above this one).
readable: Callable[[Any], list[Any]] | None = None


def install(new_tracer: Any, new_emit: Callable[[Any], None] | None, new_resource: Any = None,
            new_scope: Any = None, new_emit_steps: Callable[[Any], None] | None = None) -> None:  # fmt: skip
    global tracer, emit, resource, scope, emit_steps, origin
    tracer, emit, resource, scope = new_tracer, new_emit, new_resource, new_scope
    if origins[-1][0] is not new_resource or origins[-1][1] is not new_scope:
        origins.append((new_resource, new_scope))
    origin = len(origins) - 1
    emit_steps = new_emit_steps if new_emit_steps is not None else _as_spans(new_emit)


def _as_spans(new_emit: Callable[[Any], None] | None) -> Callable[[Any], None] | None:
    """A step's record handed over as the SDK's spans, one by one."""
    if new_emit is None:
        return None

    def each(record: Any) -> None:
        for span in readable(record):  # type: ignore[misc]
            new_emit(span)

    return each


def active() -> bool:
    return tracer is not None
