"""A for_each step whose items come from a source a page at a time (docs/design/item-sources.md),
through the engine's changes and the item relay on a real SQLite store: a page's outcome stores
its items under fixed indexes and fetches the next; a second outcome of the same page (a
redelivery, a worker whose lease was lost) stores nothing; an `open_items` entry applied twice
inserts each item once; chains go on across pages; the step settles only after the last page; a
source failing for good fails the step and its applied items roll back; a malformed page is a
failed source."""

from __future__ import annotations

import pytest

from common.engine.core.entries import AttemptResult, claim, create_task, finish_attempt
from common.engine.core.units import Refusal, new_id, step_message
from common.engine.document import Task
from common.engine.kinds.for_each.item_changes import claim_item
from common.engine.kinds.for_each.records import ITEM_KINDS
from common.engine.kinds.for_each.source.paging import read_page
from common.engine.kinds.for_each.source.fields import ItemSource
from common.engine.states import Phase, ResultCode, StepState, TaskStatus
from common.store.tasks.mutate import mutate
from tests.support.builders import make_step
from tests.support.item_records import relay as _relay, timing as _timing
from tests.unit.test_item_relay_races import _run, stores  # noqa: F401 (a fixture)

OK = AttemptResult(ResultCode.OK, output={"done": True})


def _created(tasks, parallel: int = 3, page_size: int = 4, max_items: int | None = None) -> Task:
    step = make_step("each")
    step.MaxItems = max_items
    step.Source, step.MaxParallel, step.After = ItemSource(Module="inv", Command="hosts", PageSize=page_size), parallel, []
    task = create_task(task_type="t", steps=[step], parameters={}, timing=_timing())
    tasks.insert(task)
    return task


def _page_run(task: Task):
    (run,) = [r for r in task.Runs if r.Item is None]
    return run


def _fetch(tasks, items, task_id: str, values: list, following, *, sent=None, result=None) -> Task:
    """A module's claim and outcome of the step's current page, then the relay's flush of what it owes."""
    task = tasks.get(task_id)
    run = _page_run(task)
    message = step_message(task, run)
    assert (message.Module, message.Command) == ("inv", "hosts")  # the source's, not the items' command
    claimed = mutate(tasks, task_id, lambda t: claim(t, message, "me", _timing()))
    outcome = result or AttemptResult(ResultCode.OK, output={"items": values, "next": following})
    done = mutate(tasks, task_id, lambda t: finish_attempt(t, run.DispatchId, "me", outcome, _timing(), new_id))
    assert isinstance(done, Task), done
    relay, sent = _relay(tasks, items, sent), sent if sent is not None else set()
    for entry in done.Outbox:
        if entry.Kind in ITEM_KINDS and entry.DispatchId not in sent:
            sent.add(entry.DispatchId)
            relay.apply(task_id, entry)
    return claimed


def _states(items, task_id: str, count: int) -> list[StepState]:
    return [items.get_item(task_id, 0, 0, i).State for i in range(count)]


def test_pages_store_their_items_under_fixed_indexes_and_the_step_settles_after_the_last(stores):
    tasks, items = stores
    task = _created(tasks)
    assert task.Steps[0].State is StepState.RUNNING and task.Steps[0].ItemCount == 0
    _fetch(tasks, items, task.TaskId, ["h0", "h1"], "2")  # shorter than the chains: item 2 heads its chain later
    assert _states(items, task.TaskId, 2) == [StepState.RUNNING, StepState.RUNNING]
    for item in (0, 1):
        _relay(tasks, items).apply_owes(_run(tasks, items, task.TaskId, item, OK))
    assert tasks.get(task.TaskId).Steps[0].State is StepState.RUNNING  # pages are left: it cannot settle
    _fetch(tasks, items, task.TaskId, ["h2", "h3", "h4", "h5"], "6")
    # item 2 heads its chain; 3 and 4 follow 0 and 1, done before their page came; 5 waits for 2
    assert _states(items, task.TaskId, 6)[2:] == [StepState.RUNNING] * 3 + [StepState.WAITING]
    assert [items.get_item(task.TaskId, 0, 0, i).Value for i in range(6)] == [f"h{i}" for i in range(6)]
    for item in (2, 3, 4, 5):
        _relay(tasks, items).apply_owes(_run(tasks, items, task.TaskId, item, OK))
    _fetch(tasks, items, task.TaskId, [], None)  # an empty last page: the step settles now
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.SUCCESS, done.TaskMessage
    assert done.Steps[0].ItemCount == 6 and done.Steps[0].Paging.Done and done.Steps[0].Paging.Page == 3
    assert "each" not in done.Parameters  # a source's outputs stay in the records


def test_a_page_concluded_twice_or_flushed_twice_inserts_each_item_once(stores):
    tasks, items = stores
    task = _created(tasks, parallel=2)
    first = tasks.get(task.TaskId)
    run = _page_run(first)
    sent: set[str] = set()
    _fetch(tasks, items, task.TaskId, ["a", "b", "c"], "3", sent=sent)
    # The same page's outcome again (a worker whose lease was lost, a redelivery): fenced.
    again = finish_attempt(tasks.get(task.TaskId), run.DispatchId, "me",
                           AttemptResult(ResultCode.OK, output={"items": ["x", "y"], "next": None}), _timing(), new_id)
    assert not isinstance(again, Task)
    # The page's open_items entry applied again (the sweeper repeating one whose mark was lost).
    entry = next(e for e in tasks.get(task.TaskId).Outbox if e.Kind in ITEM_KINDS)
    _relay(tasks, items).apply(task.TaskId, entry)
    _relay(tasks, items).apply(task.TaskId, entry)
    stored = items.page_items(task.TaskId, 0, 0, limit=100)
    assert [(r.Item, r.Value) for r in stored] == [(0, "a"), (1, "b"), (2, "c")]
    assert tasks.get(task.TaskId).Steps[0].Paging.Fetched == 3 and tasks.get(task.TaskId).Steps[0].Paging.After == "3"


def test_a_source_failing_for_good_fails_the_step_and_its_applied_items_roll_back(stores):
    tasks, items = stores
    task = _created(tasks, parallel=2)
    _fetch(tasks, items, task.TaskId, ["a", "b"], 2)
    for item in (0, 1):
        _relay(tasks, items).apply_owes(_run(tasks, items, task.TaskId, item, OK))
    _fetch(tasks, items, task.TaskId, [], None, result=AttemptResult(ResultCode.FAILED, "inventory down", retryable=False))
    task = tasks.get(task.TaskId)
    assert task.TaskStatus is TaskStatus.ROLLING_BACK and task.Steps[0].Paging.Failed == "inventory down"
    assert task.Steps[0].State is StepState.ROLLING_BACK  # settled failed, its rollback started
    for item in (1, 0):
        record = items.get_item(task.TaskId, 0, 0, item)
        if record.Run is not None and record.Run.Phase is Phase.ROLLBACK:
            _relay(tasks, items).apply_owes(_run(tasks, items, task.TaskId, item, OK))
    for item in (0, 1):
        record = items.get_item(task.TaskId, 0, 0, item)
        if record.Run is not None:
            _relay(tasks, items).apply_owes(_run(tasks, items, task.TaskId, item, OK))
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK, done.TaskMessage
    assert "its source failed: inventory down" in done.Steps[0].Message
    assert _states(items, task.TaskId, 2) == [StepState.ROLLED_BACK, StepState.ROLLED_BACK]


def test_a_malformed_page_is_a_failed_source(stores):
    tasks, items = stores
    task = _created(tasks)
    _fetch(tasks, items, task.TaskId, [], None, result=AttemptResult(ResultCode.OK, output={"hosts": ["a"]}))
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK
    assert "no items list" in done.Steps[0].Paging.Failed and done.Steps[0].Code is ResultCode.FAILED


@pytest.mark.parametrize("output, problem", [
    ({"items": "abc"}, "no items list"),
    ({"items": [1, 2, 3, 4, 5]}, "more than its page_size 4"),
    ({"items": [], "next": 1.5}, "string, an integer or null"),
    ({"items": [], "next": True}, "string, an integer or null"),
    ({"items": [], "total": -1}, "must be a count"),
])
def test_read_page_names_what_is_wrong(output, problem):
    found = read_page(output, 4)
    assert isinstance(found, str) and problem in found, found


def test_read_page_takes_a_page():
    assert read_page({"items": [1, 2], "next": "k2", "total": 9}, 4) == ([1, 2], "k2", 9)
    assert read_page({"items": []}, 4) == ([], None, None)


def test_a_claim_of_an_item_in_a_later_page_reads_its_value_from_its_record(stores):
    tasks, items = stores
    task = _created(tasks, parallel=1, page_size=2)
    _fetch(tasks, items, task.TaskId, ["a", "b"], 2)
    _relay(tasks, items).apply_owes(_run(tasks, items, task.TaskId, 0, OK))
    _relay(tasks, items).apply_owes(_run(tasks, items, task.TaskId, 1, OK))
    _fetch(tasks, items, task.TaskId, ["c"], None)
    record = items.get_item(task.TaskId, 0, 0, 2)
    assert record.State is StepState.RUNNING and record.Value == "c"
    claimed = claim_item(record, tasks.get(task.TaskId), record.Run.DispatchId, "me", _timing())
    assert not isinstance(claimed, Refusal) and claimed.Value == "c"


def test_an_items_own_secrets_are_masked_on_its_page():
    """A source's items never were parameters: their secret-looking keys are masked on the items
    page, and those values scrubbed wherever quoted (docs/design/item-sources.md, "Secrets")."""
    from common.secrets.task_views import masked_items

    task = create_task(task_type="t", steps=[make_step("each")], parameters={}, timing=_timing())
    shown = masked_items(task, [{"Item": 0, "Value": {"host": "h0", "password": "s3cr3t-pw"},
                                 "Output": {"note": "logged in with s3cr3t-pw"}, "Message": "s3cr3t-pw refused"}])
    assert shown[0]["Value"]["host"] == "h0" and shown[0]["Value"]["password"] != "s3cr3t-pw"
    assert "s3cr3t-pw" not in str(shown)


def test_a_source_past_the_steps_max_items_fails_the_step(stores):
    tasks, items = stores
    task = _created(tasks, parallel=2, max_items=5)
    _fetch(tasks, items, task.TaskId, ["a", "b", "c", "d"], 4)
    _fetch(tasks, items, task.TaskId, ["e", "f"], None)  # 6 in all: one too many, none of this page stored
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK and "max_items (5)" in done.Steps[0].Paging.Failed
    assert done.Steps[0].ItemCount == 4 and len(items.page_items(task.TaskId, 0, 0, limit=10)) == 4


@pytest.mark.parametrize("first", [None, "h4"])
def test_a_source_that_answers_the_cursor_it_was_asked_with_fails_instead_of_paging_forever(stores, first):
    # Its next page would be asked with the same cursor, answer the same, and so on: a loop that
    # never ends (an empty page grows no count that max_items could stop).
    tasks, items = stores
    task = _created(tasks)
    if first is not None:
        _fetch(tasks, items, task.TaskId, ["h0"], first)
    _fetch(tasks, items, task.TaskId, [], first if first is not None else "start")
    if first is None:  # the first page is asked with no cursor: its own answer is new, the next one repeats it
        _fetch(tasks, items, task.TaskId, [], "start")
    done = tasks.get(task.TaskId)
    assert done.TaskStatus is TaskStatus.ROLLED_BACK, [e.Event for e in done.History]
    assert "the cursor it was asked with" in done.Steps[0].Paging.Failed
