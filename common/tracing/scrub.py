"""No secret in a span: what a command (or a library it calls) puts in its own spans is masked
as its log lines are, before any exporter sees it.

baton's own spans (scope `baton`) carry ids, names and codes, and messages it scrubbed itself:
they pass untouched, so tracing a step costs no scrubbing. Every other span is rebuilt with its
name, attributes, events, links and status text masked by the context it ended in: the task's
secret values (common.secrets.log_lines.hidden_values, bound for each command whatever its
kind), secret-looking keys and URL passwords.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.trace import Link, Status

from common.secrets.log_lines import masked
from common.tracing.state import SCOPE


class ScrubbingProcessor(SpanProcessor):
    """Hands every ended span, scrubbed if it is not baton's own, to the processors behind it."""

    def __init__(self, processors: Sequence[SpanProcessor]):
        self._processors = tuple(processors)

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        for processor in self._processors:
            processor.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        scope = span.instrumentation_scope
        if scope is None or scope.name != SCOPE:
            span = scrubbed(span)
        for processor in self._processors:
            processor.on_end(span)

    def steps_emit(self) -> Callable[[Any], None]:
        """Where a record of a step's spans (baton's own, never scrubbed; a plain tuple:
        common.tracing.step_record) goes: straight to the queue of each batch processor behind,
        which checks nothing a record would need (a step's record is always sampled). A
        processor without such a queue gets the record's spans as the SDK's, one by one."""
        queues = [getattr(getattr(processor, "_batch_processor", None), "emit", None) for processor in self._processors]
        if not all(callable(queue) for queue in queues):
            from common.tracing.step_record import readable

            def as_spans(record: Any) -> None:
                for span in readable(record):
                    self.on_end(span)

            return as_spans
        if len(queues) == 1:
            return queues[0]  # type: ignore[return-value]

        def each(record: Any) -> None:
            for queue in queues:
                queue(record)  # type: ignore[misc]

        return each

    def shutdown(self) -> None:
        for processor in self._processors:
            processor.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(processor.force_flush(timeout_millis) for processor in self._processors)


def scrubbed(span: ReadableSpan) -> ReadableSpan:
    """A copy of `span` with every text in it masked (see the module's docstring)."""
    status = span.status
    if status.description:
        status = Status(status.status_code, masked(status.description))
    return ReadableSpan(
        name=masked(span.name),
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=_attributes(span.attributes),
        events=[Event(masked(e.name), _attributes(e.attributes), e.timestamp) for e in span.events],
        links=[Link(link.context, _attributes(link.attributes)) for link in span.links],
        kind=span.kind,
        status=status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _attributes(attributes: Any) -> dict[str, Any]:
    """Masked as a log line's fields: an attribute value is a string, a number, a boolean or a
    sequence of one of them (a sequence comes back as a tuple, as the SDK keeps it)."""
    shown = masked(dict(attributes or {}))
    return {k: tuple(v) if isinstance(v, list) else v for k, v in shown.items()}
