"""A failure budget's places (docs/design/item-records.md, "A failure budget") on every store
backend: SQLite, mongomock and SecantusDB, a real wire-protocol server. Six items of a step with a
budget of 3 fail together; six relays, each in a thread of its own with its own connection (six
replicas), decide them at once, and each decision is then repeated (the sweeper's relay, a
redelivered outcome): exactly three items take a place and roll back on their own, each once
(or with the step, when another turned the task backward before their own decision), and the
task goes backward on a fourth, never on one that holds a place."""

from __future__ import annotations

import threading

import pytest

from common.engine.kinds.for_each import records as fan_out
from common.engine.kinds.for_each.fields import Tolerance
from common.engine.states import StepState, TaskStatus
from common.store.items.open import open_item_store_for
from common.store.sqlite.tasks import SqliteStore
from tests.contract.store_fixtures import real_mongo_client, real_mongo_url, subject  # noqa: F401
from tests.support.item_records import opened as _opened, relay as _relay
from tests.unit.test_item_budget import FAILED, _item
from tests.unit.test_item_relay_races import _run

FAILING, BUDGET = 6, 3


@pytest.fixture(autouse=True)
def records(monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)


def _replica(under_test):
    """A replica's own stores: a connection of its own to the same file, or the shared client."""
    tasks = SqliteStore(under_test.store.path) if under_test.kind == "sqlite" else under_test.store
    return tasks, open_item_store_for(tasks)


def _close(items) -> None:
    if hasattr(items, "close"):  # a SQLite item store's own connections
        items.close()


def test_items_failing_together_on_many_replicas_take_exactly_the_budgets_places_once(subject):
    tasks, items = subject.store, open_item_store_for(subject.store)
    task = _opened(tasks, items, count=2 * FAILING, parallel=FAILING, tolerate=Tolerance(Count=BUDGET))
    written = [_run(tasks, items, task.TaskId, item, FAILED) for item in range(FAILING)]
    go, errors = threading.Barrier(FAILING), []

    def decide(record) -> None:
        own_tasks, own_items = _replica(subject)
        try:
            go.wait()
            _relay(own_tasks, own_items).apply_owes(record)
            _relay(own_tasks, own_items).apply_owes(record)  # repeated, from the record as it was
        except BaseException as error:  # noqa: BLE001 (reported below)
            errors.append(error)
        finally:
            _close(own_items)

    threads = [threading.Thread(target=decide, args=(record,)) for record in written]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors

    stored = tasks.get(task.TaskId)
    places = stored.Steps[0].ToleratedItems
    assert len(places) == BUDGET == len(set(places)), places
    tolerated = [i for i in range(FAILING) if _item(items, task.TaskId, i).Tolerated]
    assert set(tolerated) <= set(places)
    # A place whose item is not tolerated: the task turned backward between the place and the
    # item's decision, and the step's rollback took the record (tests/unit/test_item_budget_places.py).
    assert all(_item(items, task.TaskId, i).State is StepState.ROLLING_BACK for i in places), places
    for item in tolerated:  # its own rollback dispatched once: attempt 1, one "tolerated" event
        record = _item(items, task.TaskId, item)
        assert record.State is StepState.ROLLING_BACK and record.Run.Attempt == 1
        assert [e.Event for e in record.History].count("tolerated") == 1
    assert stored.TaskStatus is not TaskStatus.RUNNING or stored.Held is not None
    failed_on = stored.TaskMessage.split(" item ")[1].split(" ")[0]
    assert int(failed_on) not in places, stored.TaskMessage
    _close(items)
