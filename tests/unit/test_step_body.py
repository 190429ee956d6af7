"""A dispatch's outbox body is built as a dict (common.engine.core.units.step_body), not through
the StepMessage model: it must stay exactly the model's JSON dump, without Parameters, and
without Trace when the task has none, for every kind of run (a line's normal and rollback
phases, a retry, an item of a for_each step, a source's page, a traced task)."""

from __future__ import annotations

import pytest

from common.engine.core.entries import create_task
from common.engine.core.units import Timing, add_run, new_id, publish_entry, step_body, step_message
from common.engine.document import Run, Task
from common.engine.kinds.for_each.source.fields import ItemSource
from common.engine.states import Phase
from common.tracing.carrier import TraceContext
from tests.support.builders import make_step

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def _task(trace: TraceContext | None = None) -> Task:
    steps = [make_step("a", timeout=7), make_step("b", module="other", rollback=False, retry=2)]
    each = make_step("each", module="fleet")
    each.ForEach, each.MaxParallel = "hosts", 2
    paged = make_step("paged")
    paged.Source = ItemSource(Module="inv", Command="hosts", PageSize=4)
    return create_task(task_type="t", steps=[*steps, each, paged], parameters={"password": "s3cret", "hosts": ["x"]},
                       timing=Timing(100.0), trace=trace, secret_parameters=["password"])


def _runs(task: Task) -> list[Run]:
    made = [(0, None, Phase.NORMAL, 1), (0, None, Phase.ROLLBACK, 2), (1, None, Phase.NORMAL, 3), (2, 0, Phase.NORMAL, 1),
            (2, 1, Phase.ROLLBACK, 1), (3, None, Phase.NORMAL, 1), (3, 2, Phase.NORMAL, 1)]
    return [add_run(task, (cursor, item), phase, attempt, new_id, deadline=None) for cursor, item, phase, attempt in made]


@pytest.mark.parametrize("trace", [None, TraceContext(TraceParent=PARENT, TraceState="k=v")])
def test_the_body_is_the_step_messages_dump(trace):
    task = _task(trace)
    for run in _runs(task):
        message = step_message(task, run)
        expected = message.model_dump(mode="json", exclude={"Parameters", "Trace"} if trace is None else {"Parameters"})
        body = step_body(task, run)
        assert body == expected and list(body) == list(expected)  # the same keys, in the same order
        assert all(type(body[k]) is type(expected[k]) for k in body)  # 7.0 stays a float, the phase an int
        assert "s3cret" not in str(body)
        entry = publish_entry(task, run, 5.0)
        assert entry.Body == expected and entry.Queue == message.Module
