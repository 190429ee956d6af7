"""Which span is current while a step runs (common/tracing/current_step.py): the one a log line
names, a published message links to, and a command's own span is a child of."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import use_span

from common.engine.changes import AttemptResult
from common.engine.document import StepMessage
from common.engine.states import Phase, ResultCode
from common.tracing import attempts
from common.tracing.carrier import TraceContext
from common.tracing.log_fields import add_trace_ids
from common.tracing.propagation import context_of, current_links
from common.tracing.setup import install_provider

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
MESSAGE = StepMessage(TaskId="t", Cursor=0, Type=Phase.NORMAL, Module="m", Command="c", Timeout=1, Retry=0,
                      DispatchId="d", Attempt=1, Trace=TraceContext(TraceParent=f"00-{TRACE}-00f067aa0ba902b7-01"))


def _ids() -> tuple[str, str] | None:
    event = add_trace_ids(None, "", {})
    return (event["trace_id"], event["span_id"]) if "trace_id" in event else None


def test_each_block_s_log_lines_links_and_child_spans_name_the_span_it_belongs_to() -> None:
    exported, provider = InMemorySpanExporter(), TracerProvider()
    processor = SimpleSpanProcessor(exported)
    provider.add_span_processor(processor)  # the SDK's spans (a command's own, a sub-flow's)
    install_provider(provider, processor)  # baton's step spans
    tracer = provider.get_tracer("a.command")
    seen: dict[str, object] = {}
    try:
        attempt = attempts.begin(MESSAGE, "m")
        with attempt.current():
            seen["attempt"] = _ids()
            with attempt.child("claim"):
                seen["claim"] = _ids()
            attempt.start_command("thread")
            with attempt.in_command():
                seen["command"] = _ids()
                with tracer.start_as_current_span("own") as own:
                    seen["own"] = (_ids(), own.parent.span_id)
            attempt.command_ended(AttemptResult(ResultCode.OK))
            with attempt.child("commit"):
                seen["commit"] = (_ids(), current_links()[0].context.span_id)
                # a span made current inside the commit, in the task's trace as a sub-flow's is
                sub_flow = tracer.start_span("sub-flow", context=context_of(MESSAGE.Trace))
                with use_span(sub_flow, end_on_exit=True):
                    seen["sub-flow"] = (_ids(), current_links()[0].context.span_id)
                seen["commit again"] = _ids()
        seen["after"] = _ids()
        attempt.end(AttemptResult(ResultCode.OK))
    finally:
        install_provider(None)
    spans = {s.name: s for s in exported.get_finished_spans()}
    step, claim, command, commit = spans["step c"], spans["claim"], spans["command c"], spans["commit"]

    def named(span) -> tuple[str, str]:
        return (TRACE, format(span.context.span_id, "016x"))

    assert seen["attempt"] == named(step) and seen["claim"] == named(claim) and seen["command"] == named(command)
    assert seen["own"] == (named(spans["own"]), command.context.span_id)
    assert seen["commit"] == (named(commit), commit.context.span_id)
    assert seen["sub-flow"] == (named(spans["sub-flow"]), spans["sub-flow"].context.span_id)
    assert seen["commit again"] == named(commit) and seen["after"] is None
    assert claim.parent.span_id == commit.parent.span_id == command.parent.span_id == step.context.span_id
