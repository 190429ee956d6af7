"""Sub-flow outbox entries survive a crash between commit and flush: the sweeper's relay applies
them (docs/design/sub-flows.md and docs/design/outbox.md), and applying one twice changes nothing.
Real SQLite store, the in-process broker, the real sweeper."""

from __future__ import annotations

from common.broker.inprocess import InProcessBroker
from common.relay.child_relay import ChildRelay
from common.engine.document import ChildTemplate, StepMessage
from common.queues import module_queue
from common.engine.states import ResultCode, StepState, TaskStatus
from common.store.sqlite.tasks import SqliteStore
from common.relay.sweeper import SweepConfig, Sweeper
from common.engine.core.entries import AttemptResult, Timing, claim, create_task, finish_attempt
from common.store.tasks.mutate import mutate
from tests.support.builders import counter_ids, make_step

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CONFIG = SweepConfig(lease=5.0, redeliver_after=60.0, relay_grace=1.0, interval=0.1)


def parent_with_child_root():
    sub = make_step("sub")
    sub.NormalModule = sub.NormalCommand = sub.RollbackModule = sub.RollbackCommand = None
    sub.Flow = "leaf"
    sub.FlowTemplate = ChildTemplate(TaskType="leaf", Steps=[make_step("x")])
    return create_task(task_type="p", steps=[sub], parameters={}, timing=Timing(100.0), task_id="par",
                       ids=counter_ids("p"))


def test_the_relay_creates_a_child_left_unflushed_once_and_the_child_ends_the_parent(tmp_path):
    store, broker = SqliteStore(tmp_path / "t.db"), InProcessBroker()
    broker.declare(module_queue("mod"))
    clock = [100.0]
    sweeper = Sweeper(store, broker, CONFIG, clock=lambda: clock[0])
    store.insert(parent_with_child_root())  # committed; the process died before flushing
    clock[0] = 105.0
    assert sweeper.sweep_once().relayed == 1
    child = store.get("par.0")
    assert child is not None and child.Parent.TaskId == "par" and store.get("par").Outbox == []
    assert broker.queue_depth(module_queue("mod")) == 1  # the child's first step was published
    # A repeat of the same entry (a second relay) is one child still.
    entry = parent_with_child_root().Outbox[0]
    assert ChildRelay(store, lambda: Timing(106.0), lambda t: None).apply("par", entry)
    assert store.get("par.0").Version == child.Version
    # The child runs to its end; its child_finished entry (also left unflushed) reaches the parent.
    message = StepMessage.model_validate(child.Outbox[0].Body)
    mutate(store, "par.0", lambda t: claim(t, message, "w", Timing(106.0)))
    done = mutate(store, "par.0", lambda t: finish_attempt(t, message.DispatchId, "w",
                                                           AttemptResult(ResultCode.OK, output={"v": 1}), Timing(107.0)))
    assert done.TaskStatus is TaskStatus.SUCCESS and done.Outbox[0].Kind == "child_finished"
    clock[0] = 110.0
    sweeper.sweep_once()
    parent = store.get("par")
    assert parent.TaskStatus is TaskStatus.SUCCESS and parent.Steps[0].State is StepState.SUCCEEDED
    assert parent.Parameters["sub"] == {"v": 1} and store.get("par.0").Outbox == []
    sweeper.close()  # its publisher's timers end before the store closes
    store.close()


def test_a_repeated_start_of_a_child_makes_no_second_sub_flow_span(tmp_path):
    """The same start_child applied twice (the relay's repeat, or a flush of the parent that
    races the first apply's mark): one child and one `sub-flow` span, the one its trace hangs
    from. The repeat created nothing, so it starts nothing in the trace."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from common.tracing.carrier import TraceContext
    from common.tracing.setup import install_provider

    store, exported = SqliteStore(tmp_path / "t.db"), InMemorySpanExporter()
    provider = TracerProvider()
    processor = SimpleSpanProcessor(exported)
    provider.add_span_processor(processor)
    install_provider(provider, processor)
    try:
        parent = parent_with_child_root()
        entry = parent.Outbox[0]
        entry.Body["Trace"] = TraceContext(TraceParent=f"00-{TRACE}-00f067aa0ba902b7-01").model_dump()
        relay = ChildRelay(store, lambda: Timing(106.0), lambda t: None)
        assert relay.apply("par", entry) and relay.apply("par", entry)
        child = store.get("par.0")
    finally:
        install_provider(None)
        store.close()
    (span,) = [s for s in exported.get_finished_spans() if s.name == "sub-flow leaf"]
    assert format(span.context.trace_id, "032x") == TRACE
    assert child.Trace.TraceParent == f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-01"
