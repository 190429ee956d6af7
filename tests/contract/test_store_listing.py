"""The TaskStore contract, listing: filters (type, status, owner, labels, time range, failed
items), newest first, ties broken by task id, and pages that list every task once while tasks
are inserted. Run against every store, as tests/contract/test_store_contract.py."""

from __future__ import annotations

from typing import Any

from common.engine.document import Task
from common.engine.states import TaskStatus
from common.store.tasks.filters import TaskFilter, page_key
from tests.contract.store_documents import NOW, claimed, new_task, write
from tests.contract.store_fixtures import store, subject  # noqa: F401  (fixtures are found by name)


def test_list_tasks_filters_newest_first(store: Any) -> None:
    mysql = [new_task(NOW + i, task_type="create_mysql") for i in range(4)]
    redis = [new_task(NOW + 10 + i, task_type="create_redis") for i in range(2)]
    for task in mysql + redis:
        store.insert(task)
    running = [write(store, t, lambda t: claimed(t, NOW + 20)) for t in (mysql[1], redis[0])]

    def ids(tasks: list[Task]) -> list[str]:
        return [t.TaskId for t in tasks]

    everything = [*reversed(redis), *reversed(mysql)]
    assert ids(store.list_tasks()) == ids(everything)
    assert ids(store.list_tasks(limit=3)) == ids(everything[:3])
    assert ids(store.list_tasks(TaskFilter(task_type="create_mysql"))) == ids(list(reversed(mysql)))
    assert ids(store.list_tasks(TaskFilter(status=TaskStatus.RUNNING))) == [redis[0].TaskId, mysql[1].TaskId]
    assert ids(store.list_tasks(TaskFilter(status=TaskStatus.RUNNING, task_type="create_mysql"))) == [
        mysql[1].TaskId
    ]
    waiting_redis = store.list_tasks(TaskFilter(status=TaskStatus.NOT_STARTED, task_type="create_redis"))
    assert ids(waiting_redis) == [redis[1].TaskId]
    assert store.list_tasks(TaskFilter(status=TaskStatus.SUCCESS)) == []
    assert store.list_tasks(limit=0) == []
    assert running[0].TaskStatus is TaskStatus.RUNNING


def test_list_tasks_by_owner_label_and_time_range(store: Any) -> None:
    def make(i: int, user: str | None, labels: dict[str, str]) -> Task:
        return new_task(NOW + i, user_id=user, labels=labels)

    tasks = [
        make(0, "alice", {"team": "db", "env": "prod"}),
        make(1, "bob", {"team": "db", "env": "dev"}),
        make(2, "alice", {"team": "web"}),
        make(3, None, {"team": "db", "env": "prod"}),
        make(4, "alice", {"team": "db", "env": "prod"}),
    ]
    for task in tasks:
        store.insert(task)

    def ids(limit: int = 100, **filters: Any) -> list[int]:
        return [tasks.index(t) for t in store.list_tasks(TaskFilter(**filters), limit=limit)]

    assert ids(user_id="alice") == [4, 2, 0]
    assert ids(labels={"team": "db"}) == [4, 3, 1, 0]
    assert ids(labels={"team": "db", "env": "prod"}) == [4, 3, 0]
    assert ids(labels={"team": "db", "env": "prod"}, user_id="alice") == [4, 0]
    assert ids(labels={"env": "staging"}) == []
    assert ids(labels={"nothing": "here"}) == []
    assert ids(created_from=NOW + 1, created_to=NOW + 3) == [2, 1]  # from inclusive, to exclusive
    assert ids(created_from=NOW + 3) == [4, 3]
    assert ids(created_to=NOW + 0.5) == [0]
    assert ids(user_id="alice", created_from=NOW + 1, limit=1) == [4]
    assert ids(user_id="nobody") == []


def test_list_tasks_with_failed_items(store: Any) -> None:
    """Only the tasks that ended with items failed within a for_each step's budget; the filter's
    counts agree."""
    tasks = [new_task(NOW + i) for i in range(3)]
    tasks[0].FailedItems, tasks[2].FailedItems = 3, 1
    tasks[0].TaskStatus = tasks[2].TaskStatus = TaskStatus.SUCCESS
    for task in tasks:
        store.insert(task)
    assert [t.TaskId for t in store.list_tasks(TaskFilter(failed_items=True))] == [tasks[2].TaskId, tasks[0].TaskId]
    assert len(store.list_tasks(TaskFilter(failed_items=False))) == 3
    assert store.count_tasks(TaskFilter(failed_items=True)) == {TaskStatus.SUCCESS: 2}
    assert store.get(tasks[0].TaskId).FailedItems == 3 and store.get(tasks[1].TaskId).FailedItems is None


def test_list_tasks_breaks_ties_on_time_by_task_id(store: Any) -> None:
    same_time = [new_task(NOW, task_id=f"t-{i}") for i in (3, 1, 2)]
    for task in same_time:
        store.insert(task)
    assert [t.TaskId for t in store.list_tasks()] == ["t-3", "t-2", "t-1"]
    assert [t.TaskId for t in store.list_tasks(TaskFilter(after=(NOW, "t-3")))] == ["t-2", "t-1"]
    assert [t.TaskId for t in store.list_tasks(TaskFilter(after=(NOW, "t-1")))] == []
    assert [t.TaskId for t in store.list_tasks(TaskFilter(after=(NOW + 1, "")))] == ["t-3", "t-2", "t-1"]


def test_pages_list_every_task_once_while_tasks_are_inserted(store: Any) -> None:
    # Ties on TimeCreate across page boundaries, and new tasks arriving between pages.
    old = [new_task(NOW + i // 3, task_id=f"old-{i:02}") for i in range(14)]
    for task in old:
        store.insert(task)
    seen: list[str] = []
    after = None
    for page_number in range(100):
        page = store.list_tasks(TaskFilter(after=after, labels=None), limit=4)
        if not page:
            break
        seen += [t.TaskId for t in page]
        after = page_key(page[-1])
        store.insert(new_task(NOW + 100 + page_number, task_id=f"new-{page_number}"))
    expected = [t.TaskId for t in sorted(old, key=lambda t: (t.TimeCreate, t.TaskId), reverse=True)]
    assert seen == expected


def test_filtered_pages(store: Any) -> None:
    for i in range(7):
        store.insert(new_task(NOW + i, task_id=f"t-{i}", user_id="alice" if i % 2 else "bob"))
    first = store.list_tasks(TaskFilter(user_id="bob"), limit=2)
    second = store.list_tasks(TaskFilter(user_id="bob", after=page_key(first[-1])), limit=2)
    assert [t.TaskId for t in first + second] == ["t-6", "t-4", "t-2", "t-0"]
