"""The store contract for a scoped token's listings (docs/design/access.md): `scope`, an OR of
namespaces each an AND of task types and labels, in the store's own query, so pages and counts
hold to it; the same answer from every store, and the same as common.access decides in Python."""

from __future__ import annotations

from typing import Any

import pytest

from common.access import Namespace, role_on
from common.engine.document import Task
from common.engine.states import TaskStatus
from common.store.tasks.filters import TaskFilter
from tests.contract.store_fixtures import StoreUnderTest, subject  # noqa: F401
from tests.contract.store_documents import NOW, new_task


@pytest.fixture
def store(subject: StoreUnderTest) -> Any:  # noqa: F811
    return subject.store


def tasks(store: Any) -> list[Task]:
    made = [
        new_task(NOW + 0, task_id="t0", task_type="create_db", labels={"team": "payments"}),
        new_task(NOW + 1, task_id="t1", task_type="create_db", labels={"team": "shop"}),
        new_task(NOW + 2, task_id="t2", task_type="report", labels={"team": "payments", "env": "prod"}),
        new_task(NOW + 3, task_id="t3", task_type="report", labels={}),
        new_task(NOW + 4, task_id="t4", task_type="resize_db", labels={"team": "payments", "app/tier-x": "web"}),
    ]
    for task in made:
        store.insert(task)
    return made


DBS = Namespace("dbs", "operator", frozenset({"create_db", "resize_db"}), {"team": "payments"})
ALL_OF_PAYMENTS = Namespace("all", "read", frozenset(), {"team": "payments"})
REPORTS = Namespace("reports", "submit", frozenset({"report"}))
PROD = Namespace("prod", "read", frozenset(), {"team": "payments", "env": "prod"})
WEB = Namespace("web", "read", frozenset(), {"app/tier-x": "web"})  # a key with every character a key may hold


@pytest.mark.parametrize(("scope", "expected"), [
    ((DBS,), ["t4", "t0"]),
    ((ALL_OF_PAYMENTS,), ["t4", "t2", "t0"]),
    ((REPORTS,), ["t3", "t2"]),
    ((DBS, REPORTS), ["t4", "t3", "t2", "t0"]),
    ((PROD,), ["t2"]),
    ((WEB,), ["t4"]),
    ((WEB, PROD), ["t4", "t2"]),
    ((), []),  # no namespace: nothing
    (None, ["t4", "t3", "t2", "t1", "t0"]),  # not scoped: everything
])  # fmt: skip
def test_a_scope_selects_its_namespaces_tasks_in_lists_and_counts(store: Any, scope: Any, expected: list[str]) -> None:
    made = tasks(store)
    assert [t.TaskId for t in store.list_tasks(TaskFilter(scope=scope))] == expected
    counts = store.count_tasks(TaskFilter(scope=scope))
    assert sum(counts.values()) == len(expected)
    if scope is not None:  # the store agrees with the Python decision the API makes on one task
        assert [t.TaskId for t in reversed(made) if role_on(scope, t.TaskType, t.Labels)] == expected


def test_a_scope_goes_with_the_other_filters_and_pages(store: Any) -> None:
    tasks(store)
    assert [t.TaskId for t in store.list_tasks(TaskFilter(scope=(ALL_OF_PAYMENTS,), task_type="report"))] == ["t2"]
    assert [t.TaskId for t in store.list_tasks(TaskFilter(scope=(ALL_OF_PAYMENTS,), labels={"team": "shop"}))] == []
    assert [t.TaskId for t in store.list_tasks(TaskFilter(scope=(DBS, REPORTS), search="t"), limit=2)] == ["t4", "t3"]
    first = store.list_tasks(TaskFilter(scope=(DBS,)), limit=1)
    assert [t.TaskId for t in store.list_tasks(TaskFilter(scope=(DBS,), after=(first[0].TimeCreate, "t4")))] == ["t0"]
    assert store.count_tasks(TaskFilter(scope=(DBS,), status=TaskStatus.NOT_STARTED)) == {TaskStatus.NOT_STARTED: 2}
