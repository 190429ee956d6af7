"""The span a task's trace starts from: its submission (`submit <type>`, in OSS, a child of the
API request and so of the caller's trace), or, for a sub-flow's child task, its start
(`sub-flow <type>`, a child of the parent task's span, linked to the span that asked for it).
Its W3C context is what the task document keeps (`Task.Trace`) and every step message copies.

A child's start is applied again whenever its outbox entry is (the relay's repeat, a flush of the
parent racing the first apply's mark): a repeat that found the child created already ends no span,
so exports none; the apply that created it, or one that failed (the child may have been written,
its trace hangs from that span), does.

With tracing off, the blocks yield NO_TASK_SPAN: no trace, no span.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from common.tracing import attributes as a
from common.tracing import state
from common.tracing.carrier import TraceContext


class NoTaskSpan:
    trace: TraceContext | None = None

    def created(self, task_id: str, created: bool = True, existing: TraceContext | None = None) -> None:
        pass


NO_TASK_SPAN = NoTaskSpan()


class _TaskSpan(NoTaskSpan):
    def __init__(self, span: Any):
        from common.tracing.propagation import trace_of

        self._span = span
        self.trace = trace_of(span)
        self.made = False  # `created` said this call created its task
        self.failed = False  # the block raised: whether the task was written is not known

    def created(self, task_id: str, created: bool = True, existing: TraceContext | None = None) -> None:
        """The task it made (or, `created` False, the one its idempotency key named, whose trace
        is the first submission's: linked)."""
        self.made = created
        self._span.set_attribute(a.TASK_ID, task_id)
        self._span.set_attribute(a.CREATED, created)
        if existing is not None and not created:
            from common.tracing.propagation import links_to

            for link in links_to(existing.TraceParent):
                self._span.add_link(link.context)


@contextlib.contextmanager
def submission(task_type: str) -> Iterator[NoTaskSpan]:
    """The span of a submission, current inside the block."""
    tracer = state.tracer
    if tracer is None:
        yield NO_TASK_SPAN
        return
    with _span(tracer, f"submit {task_type}", {a.TASK_TYPE: task_type}, None, []) as span:
        yield span


@contextlib.contextmanager
def sub_flow(body: dict[str, Any]) -> Iterator[NoTaskSpan]:
    """The span of a child task's start, from its parent's `start_child` entry."""
    tracer = state.tracer
    parent = body.get("Trace")
    if tracer is None:
        yield NO_TASK_SPAN
        return
    from common.tracing.propagation import context_of, current_links

    link = current_links()  # the span that asked for it: a step's commit, a submission, the relay
    attributes: dict[str, Any] = {a.TASK_ID: body["TaskId"], a.TASK_TYPE: body.get("TaskType", ""),
                                  a.PARENT_TASK_ID: body["ParentTaskId"]}
    where = body.get("Parent") or {}
    if where.get("Cursor") is not None:
        attributes[a.STEP] = where["Cursor"]
    if where.get("Item") is not None:
        attributes[a.ITEM] = where["Item"]
    context = context_of(TraceContext.model_validate(parent)) if parent else None
    with _span(tracer, f"sub-flow {body.get('TaskType', '')}", attributes, context, link,
               ends=lambda started: started.made or started.failed) as span:  # fmt: skip
        yield span


@contextlib.contextmanager
def _span(tracer: Any, name: str, attributes: dict[str, Any], context: Any, links: list[Any],
          ends: Callable[[_TaskSpan], bool] = lambda started: True) -> Iterator[_TaskSpan]:  # fmt: skip
    """A task span, current inside the block; ended (so exported) at its end if `ends` says so.
    A span never ended is never exported: nothing else refers to it."""
    from opentelemetry.trace import Status, StatusCode, use_span

    span = tracer.start_span(name, context=context, attributes=attributes, links=links)
    started = _TaskSpan(span)
    try:
        with use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
            yield started
    except Exception as exc:  # refused (bad parameters, a conflict): named, never its text
        started.failed = True
        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        raise
    finally:
        if ends(started):
            span.end()
