"""The sweeper's history retention job (BATON_TASK_HISTORY_RETENTION_DAYS) on a real SQLite
store: archived events past the retention go, the task's document keeps its newest events, and
the job runs at most once an hour."""

from __future__ import annotations

import time

from common.engine.core.history import with_full_history
from common.engine.document import Task
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.units import record
from common.engine.core.entries import Timing, create_task
from oss.services.history_retention import HistoryRetention
from oss.wiring import build_sweeper
from common.settings import load_settings
from tests.support.builders import make_step

DAY = 86400.0


def test_old_archived_events_are_deleted_and_the_document_keeps_its_newest(tmp_path):
    store = SqliteStore(tmp_path / "t.db")
    try:
        old = time.time() - 10 * DAY
        task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(old))
        store.insert(task)
        for n in range(150):
            def note(t: Task, n: int = n) -> Task:
                new = t.clone()
                record(new, old + n, f"note{n}")
                return new
            mutate(store, task.TaskId, note)
        stored = store.get(task.TaskId)
        assert stored.HistoryArchived > 0
        job = HistoryRetention(store, retention_seconds=7 * DAY)
        assert job(time.time()) == stored.HistoryArchived  # every archived event is 10 days old
        assert job(time.time() + 60) == 0  # not again within the hour
        shown = with_full_history(store, store.get(task.TaskId))
        assert shown.History == stored.History  # the document's own events stay
    finally:
        store.close()


def test_the_sweeper_runs_it_only_when_a_retention_is_set(tmp_path):
    from common.broker.inprocess import InProcessBroker
    from common.flows import parse_flows
    from oss.services.tasks import TaskService

    url = f"sqlite:{tmp_path / 'w.db'}"
    flows = parse_flows("version: 1\ntask_types:\n  t:\n    steps:\n      - name: a\n        normal: {module: m, command: c}\n")
    for days, expected in ((0, False), (30, True)):
        settings = load_settings(store_url=url, task_history_retention_days=days)
        store, broker = SqliteStore(tmp_path / "w.db"), InProcessBroker()
        service = TaskService(store, broker, flows, settings)
        try:
            sweeper = build_sweeper(settings, store, broker, service)
            assert any(isinstance(job, HistoryRetention) for job in sweeper._jobs) is expected
        finally:
            service.close()
            broker.close()
            store.close()
