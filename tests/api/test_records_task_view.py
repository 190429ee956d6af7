"""The task view of a task whose for_each step keeps its items in records
(docs/design/item-records.md): run by the real module runtime on the in-process broker, the task
succeeds, its document stays small (no items in it, however many), and GET /tasks/{id} answers with
the step's outcome."""

from __future__ import annotations

from common.engine.kinds.for_each import records as fan_out
from common.engine.kinds.for_each.records import keeps_records
from common.engine.states import TaskStatus
from tests.api.support import auth, wide_task_done

ITEMS = 60


def test_a_step_over_records_is_shown_with_its_outcome_and_no_items(tmp_path, monkeypatch):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)
    with wide_task_done(tmp_path, ITEMS) as (client, store, task_id):
        stored = store.get(task_id)
        assert stored.TaskStatus is TaskStatus.SUCCESS
        assert keeps_records(stored.Steps[0]) and stored.Steps[0].Items is None
        assert len(stored.Parameters["each"]) == ITEMS  # the outputs, gathered in item order
        assert len(stored.History) < 20  # the items' events are in their records
        shown = client.get(f"/api/v1/tasks/{task_id}", headers=auth())
        assert shown.status_code == 200, shown.text
        step = shown.json()["Steps"][0]
        assert step["State"] == "succeeded" and step["ItemCount"] == ITEMS and not step.get("Items")
        assert step["Code"] == 0 and step["TimeEnd"] is not None
