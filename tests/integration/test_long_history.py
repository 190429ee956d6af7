"""A long task keeps a bounded document and loses no history (docs/design/stores.md, "Bounded
documents"): a `for_each` over 120 items, run by the real module runtime on the in-process broker,
ends with at most 100 events in its stored document, while the API's view (and the SSE stream's ids)
still count and show every event, and every item's attempt."""

from __future__ import annotations

import pytest

from common.engine.core.history import HISTORY_LIMIT
from common.engine.states import TaskStatus
from tests.api.support import auth, wide_task_done

ITEMS = 120


@pytest.mark.usefixtures("inline_items")
def test_a_task_of_many_events_keeps_a_bounded_document_and_shows_all_of_them(tmp_path):
    with wide_task_done(tmp_path, ITEMS) as (client, store, task_id):
        stored = store.get(task_id)
        assert stored.TaskStatus is TaskStatus.SUCCESS
        assert len(stored.History) <= HISTORY_LIMIT and stored.HistoryArchived > 0
        shown = client.get(f"/api/v1/tasks/{task_id}", headers=auth()).json()
        assert len(shown["History"]) == stored.history_count > 3 * ITEMS  # dispatched, claimed, succeeded
        claimed_items = {e["Item"] for e in shown["History"] if e["Event"] == "claimed"}
        assert claimed_items == set(range(ITEMS))  # the oldest items' events too
        assert len([a for a in shown["Attempts"] if a.get("Item") is not None]) == ITEMS
        with client.stream("GET", f"/api/v1/tasks/{task_id}/events", headers=auth()) as stream:
            text = "".join(stream.iter_text())
        assert text.count("event: change") == stored.history_count
        assert f"id: {stored.Version}.{stored.history_count}" in text
