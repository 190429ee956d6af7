"""A submission's answer (oss.api.created_view) is task_view's, byte for byte, whether it was
built from the task's own values (nothing masked or held) or took task_view's way (a secret, a
URL, a delayed start, a lock's line)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.errors import InvalidInput, InvalidParameters
from oss.api.created_view import created_answer, unmasked_view
from oss.api.schemas import TaskCreated
from oss.api.views import task_view
from tests.api.support import FLOWS, SECRET, SUBMITTER, auth, open_api

CREATED_FLOWS = FLOWS + """
  hooked:
    notify: {url: "https://user:pw@hooks.example.com/baton?token=abc"}
    steps:
      - name: only
        normal: {module: monitor, command: noop}
  locked:
    parameters:
      cluster: {type: string, required: true}
    lock: {key: "cluster:{cluster}"}
    steps:
      - name: only
        normal: {module: monitor, command: noop}
  chained:
    steps:
      - name: first
        normal: {module: resource, command: noop}
      - name: second
        normal: {module: mysql, command: noop}
        rollback: {module: mysql, command: noop_rollback}
      - name: third
        after: [first]
        normal: {module: monitor, command: noop}
  kinds:
    parameters:
      hosts: {type: array, required: true}
      name: {type: string, default: db1}
    rate: {key: "kinds", limit: 1000, per: 60s}
    steps:
      - name: ask
        approve: {count: 1, roles: [operator]}
      - name: each_host
        for_each: hosts
        max_parallel: 3
        lock: {key: "host:{item}"}
        normal:   {module: mysql, command: noop}
        rollback: {module: mysql, command: noop_rollback}
      - name: child
        flow: create_db
        inputs: {name: name}
  fan_first:
    parameters:
      hosts: {type: array, required: true}
    steps:
      - name: each
        for_each: hosts
        tolerate: {percent: 10}
        normal:   {module: mysql, command: noop}
        rollback: {module: mysql, command: noop_rollback}
"""

# (task type, parameters, options, whether the answer is built from the task's own values)
SUBMISSIONS = [
    ("free_form", {}, {}, True),
    ("chained", {}, {"labels": {"team": "db"}, "priority": 7, "user_id": "u1", "idempotency_key": "k1"}, True),
    ("free_form", {"note": "plain words", "count": 3, "nested": {"list": [1, 2.5, None]}}, {}, True),
    ("locked", {"cluster": "c1"}, {}, True),  # holds the lock
    ("locked", {"cluster": "c1"}, {}, True),  # waits in line for it: its own WaitingFor
    ("create_db", {"name": "db1", "admin_password": SECRET}, {}, False),
    ("free_form", {"db": {"password": "abc"}}, {}, False),  # a key named like a secret
    ("free_form", {"dsn": "mysql://app:pw@db.example.com/x"}, {}, False),
    ("hooked", {}, {}, False),
    ("kinds", {"hosts": ["h1", "h2"]}, {}, True),  # an approval first, a for_each and a sub-flow after
    ("fan_first", {"hosts": ["h1", "h2"]}, {}, True),  # its items open in records (an outbox entry)
    ("free_form", {}, {"start_at": time.time() + 3600}, False),
]


@pytest.fixture
def client(tmp_path) -> Iterator[TestClient]:
    app, store, broker = open_api(tmp_path, CREATED_FLOWS)
    with TestClient(app) as client:
        yield client
    store.close()
    broker.close()


@pytest.fixture
def service(client):
    return client.app.state.baton.service


def test_every_answer_is_task_views_byte_for_byte(service):
    for task_type, parameters, options, own_values in SUBMISSIONS:
        submission = service.submit(task_type, parameters, submitted_by="sam", **options)
        task, now = submission.task, time.time()
        assert (unmasked_view(task, now) is not None) is own_values, (task_type, parameters, options)
        location = f"/api/v1/tasks/{task.TaskId}"
        old = TaskCreated(task_id=task.TaskId, created=True, location=location, task=task_view(task, now))
        assert created_answer(task, now, True, location) == old.model_dump_json(), (task_type, parameters, options)
    assert SECRET not in created_answer(task, now, True, location)  # the last: a delayed start


def test_a_repeated_submission_answers_the_stored_task_as_task_view_shows_it(service):
    first = service.submit("chained", {}, submitted_by="sam", idempotency_key="again")
    again = service.submit("chained", {}, submitted_by="sam", idempotency_key="again")
    assert not again.created and again.task.TaskId == first.task.TaskId
    now = time.time()
    old = TaskCreated(task_id=again.task.TaskId, created=False, location="/x", task=task_view(again.task, now))
    assert created_answer(again.task, now, False, "/x") == old.model_dump_json()


def test_the_route_answers_with_a_secret_masked(client):
    answer = client.post("/api/v1/tasks", json={"task_type": "create_db",
                                                "parameters": {"name": "db1", "admin_password": SECRET}},
                         headers=auth(SUBMITTER))  # fmt: skip
    hooked = client.post("/api/v1/tasks", json={"task_type": "hooked"}, headers=auth(SUBMITTER))
    assert answer.status_code == 201 and SECRET not in answer.text and '"admin_password":"***"' in answer.text
    assert hooked.status_code == 201 and "token=abc" not in hooked.text and ":pw@" not in hooked.text


# Keys named like secrets in every casing and spelling the masks know (and some they do not),
# URLs with passwords whole, split or without a scheme, secret values repeated in other values.
_KEYS = st.sampled_from(["password", "PASSWORD", "Pass", "db_pass", "\u017fecret", "SECRET", "tokeN", "api_key", "ApiKey",
                         "api-key", "credential", "x", "name", "url", "dsn", "hunter2hunter", "user:pw@h", "p\u0430ssword"])
_TEXT = st.sampled_from(["hunter2hunter", "mysql://u:pw@db/x", "u:pw@db", "mysql:/", "/u:pw@db", "x mysql://a:b@c y", "***",
                         "://", "://u:p@h", "HTTP://U:P@H", "a\nmysql://u:p@h", "https://user@host", "abcd", ""]) | st.text(max_size=8)
_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | _TEXT,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3), max_leaves=10)
_LABELS = st.dictionaries(st.sampled_from(["team", "password", "url"]),
                          st.sampled_from(["hunter2hunter", "mysql://u:pw@db/x", "plain", "***", "u:pw@h"]), max_size=2)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(parameters=st.dictionaries(_KEYS, _VALUES, max_size=4), labels=_LABELS,
       task_type=st.sampled_from(["free_form", "chained", "kinds", "locked"]),
       user_id=st.sampled_from([None, "hunter2hunter", "mysql://u:pw@h"]))  # fmt: skip
def test_any_submission_s_answer_is_task_views_and_shows_no_url_password(service, parameters, labels, task_type, user_id):
    parameters = {**parameters, **{"kinds": {"hosts": ["h1"]}, "locked": {"cluster": "c1"}}.get(task_type, {})}
    try:
        submission = service.submit(task_type, parameters, submitted_by="sam", labels=labels, user_id=user_id)
    except (InvalidInput, InvalidParameters):  # a key the stores cannot hold ("."), say
        return
    task, now = submission.task, time.time()
    location = f"/api/v1/tasks/{task.TaskId}"
    old = TaskCreated(task_id=task.TaskId, created=True, location=location, task=task_view(task, now))
    answer = created_answer(task, now, True, location)
    assert answer == old.model_dump_json()
    assert not any(url in answer for url in ("mysql://u:pw@", "mysql://a:b@", "mysql://u:p@", "HTTP://U:P@"))
