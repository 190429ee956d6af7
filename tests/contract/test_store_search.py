"""The store contract for what the console's search box and counts ask: `search` (a TaskId
prefix, or text in the task type, message or a label, any case) and `count_tasks` (per status),
the same answer from every store ([sqlite], [mongo-mongomock], [mongo-real] when reachable)."""

from __future__ import annotations

from typing import Any

import pytest

from common.engine.document import Task
from common.engine.states import TaskStatus
from common.store.tasks.filters import TaskFilter, search_matches
from tests.contract.store_fixtures import StoreUnderTest, subject  # noqa: F401
from tests.contract.store_documents import NOW, claimed, new_task, write


@pytest.fixture
def store(subject: StoreUnderTest) -> Any:  # noqa: F811
    return subject.store


def tasks_to_search(store: Any) -> list[Task]:
    tasks = [
        new_task(NOW + 0, task_id="ab12cd34", task_type="create_mysql", labels={"team": "payments"}),
        new_task(NOW + 1, task_id="ab99ffee", task_type="create_redis", labels={"env": "Staging"}),
        new_task(NOW + 2, task_id="cd00ab12", task_type="drop_mysql", labels={}),
        new_task(NOW + 3, task_id="ef55aa00", task_type="resize_disk", labels={"note": "50% (a+b)*"}),
    ]
    tasks[2].TaskMessage = "step 1 (init) failed: Disk FULL on host-7"
    for task in tasks:
        store.insert(task)
    return tasks


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ab", [1, 0]),  # an id prefix; "cd00ab12" holds "ab" but does not start with it
        ("AB12CD34", [0]),  # a whole id, any case
        ("ab12cd34x", []),
        ("mysql", [2, 0]),  # in the task type
        ("MySQL", [2, 0]),
        ("disk full", [2]),  # in the message, any case
        ("resize_disk", [3]),
        ("payments", [0]),  # a label's value...
        ("team=pay", [0]),  # ...or key=value
        ("env=staging", [1]),
        ("m=pay", [0]),
        ("team=redis", []),  # not across fields
        ("50% (a+b)*", [3]),  # taken literally: no pattern characters
        ("%", [3]),
        ("_", [3, 2, 1, 0]),  # every type has an underscore; no single-character wildcard
        ("nothing like it", []),
    ],
)
def test_search_by_id_prefix_or_text(store: Any, text: str, expected: list[int]) -> None:
    tasks = tasks_to_search(store)
    found = [tasks.index(t) for t in store.list_tasks(TaskFilter(search=text))]
    assert found == expected
    # The Python form (the API's check on the masked view) agrees with the store.
    assert [i for i in reversed(range(len(tasks))) if search_matches(tasks[i], text)] == expected


def test_search_goes_with_the_other_filters_and_pages(store: Any) -> None:
    tasks = tasks_to_search(store)
    assert [t.TaskId for t in store.list_tasks(TaskFilter(search="mysql", task_type="drop_mysql"))] == ["cd00ab12"]
    assert [t.TaskId for t in store.list_tasks(TaskFilter(search="mysql"), limit=1)] == ["cd00ab12"]
    after = (tasks[2].TimeCreate, tasks[2].TaskId)
    assert [t.TaskId for t in store.list_tasks(TaskFilter(search="mysql", after=after))] == ["ab12cd34"]


def test_count_tasks_per_status(store: Any) -> None:
    tasks = tasks_to_search(store)
    write(store, tasks[0], lambda t: claimed(t, NOW + 10))
    write(store, tasks[3], lambda t: claimed(t, NOW + 10))
    assert store.count_tasks(TaskFilter()) == {TaskStatus.RUNNING: 2, TaskStatus.NOT_STARTED: 2}
    assert store.count_tasks(TaskFilter(search="mysql")) == {
        TaskStatus.RUNNING: 1,
        TaskStatus.NOT_STARTED: 1,
    }
    assert store.count_tasks(TaskFilter(status=TaskStatus.RUNNING, search="ab")) == {TaskStatus.RUNNING: 1}
    assert store.count_tasks(TaskFilter(labels={"team": "payments"})) == {TaskStatus.RUNNING: 1}
    assert store.count_tasks(TaskFilter(created_from=NOW + 1, created_to=NOW + 3)) == {
        TaskStatus.NOT_STARTED: 2
    }
    assert store.count_tasks(TaskFilter(search="nothing like it")) == {}
