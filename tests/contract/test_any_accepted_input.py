"""The property: for ANY JSON value a client sends as a parameter, the API either
refuses it at the edge with a 4xx, or the task can be read back, listed, swept and processed,
on every store kind the store contract suite runs (tests/contract/store_fixtures.py).

Processing is real: the module runtime consumes the step message and runs the command in its
child process. The sweeper runs with its clock an hour ahead, so every such task is due for it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.broker.inprocess import InProcessBroker
from common.flows import load_flows
from common.runtime.module import ModuleRuntime
from common.engine.states import TaskStatus
from common.relay.sweeper import SweepConfig, Sweeper
from oss.api import create_app
from oss.settings import load_oss_settings
from tests.contract.store_fixtures import (  # noqa: F401  (fixtures are found by name)
    StoreUnderTest,
    subject,
)
from tests.support.builders import nested
from tests.support.cluster import STATE_DEADLINE, wait_until

TOKEN = "property-operator-token-0123"
FLOWS = """
version: 1
defaults: {timeout: 10, retry: 5, backoff: {initial: 0.01, max: 0.05, multiplier: 1, jitter: 0}}
task_types:
  anything:
    steps:
      - name: only
        normal:   {module: resource, command: noop}
        rollback: {module: resource, command: noop_rollback}
"""


HOSTILE_TEXT = ["\ud800", "\udfff", "a\x00b", "$where", "a.b", "", "mysql://u:p@h", "é" * 3, "🙂"]
keys = st.text(max_size=6) | st.sampled_from(HOSTILE_TEXT + ["token", "_id"])
leaves = (
    st.none() | st.booleans() | st.integers(-(2**65), 2**65) | st.floats()
    | st.text(st.characters(codec=None, categories=None), max_size=12) | st.sampled_from(HOSTILE_TEXT)
)  # fmt: skip
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
                      max_leaves=16) | st.integers(20, 45).map(nested)  # fmt: skip


@pytest.fixture
def service(subject: StoreUnderTest, tmp_path: Any) -> Iterator[tuple[TestClient, Any, Any]]:
    flows_path = tmp_path / "flows.yaml"
    flows_path.write_text(FLOWS)
    options = dict(store_url=f"sqlite:///{tmp_path / 'unused.db'}", flows_path=str(flows_path),
                   api_tokens=f"olga:{TOKEN}:operator", oss_sweeper=False, concurrency=2,
                   lease_seconds=5, redeliver_after_seconds=5)  # fmt: skip
    config = load_oss_settings(**options)
    broker = InProcessBroker()
    app = create_app(config, store=subject.store, broker=broker, flows=load_flows(flows_path))
    runtime = ModuleRuntime(registry_ref="tests.support.standin_commands:resource", settings=config,
                            store=subject.store, broker=broker)  # fmt: skip
    runtime.start()
    sweeper = Sweeper(subject.store, broker, SweepConfig(lease=5, redeliver_after=5, relay_grace=1, interval=1),
                      clock=lambda: time.time() + 3600)  # fmt: skip
    try:
        with TestClient(app) as client:
            yield client, subject.store, sweeper
    finally:
        runtime.stop(grace=2)
        sweeper.close()
        broker.close()


def test_any_parameter_value_is_refused_with_a_4xx_or_read_listed_swept_and_processed(service):
    client, store, sweeper = service
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}

    @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(value=values)
    def check(value: Any) -> None:
        # json.dumps writes what a hostile client could: NaN, 1e999-style Infinity, \\ud800 escapes.
        body = json.dumps({"task_type": "anything", "parameters": {"v": value}})
        answer = client.post("/api/v1/tasks", content=body, headers=headers)
        assert answer.status_code < 500, answer.text
        if answer.status_code != 201:
            assert answer.status_code in (400, 422) and answer.json()["error"]["fields"] is not None
            return
        task_id = answer.json()["task_id"]
        assert store.get(task_id).Parameters["v"] == value  # read back, exactly
        assert client.get(f"/api/v1/tasks/{task_id}", headers=headers).status_code == 200
        page = client.get("/api/v1/tasks", params={"task_type": "anything", "limit": 500}, headers=headers)
        assert page.status_code == 200
        assert any(item["TaskId"] == task_id and not item["TaskMessage"] for item in page.json()["items"])
        sweeper.sweep_once()  # an hour ahead: this task is due (raises on any document it cannot handle)
        wait_until(lambda: store.get(task_id).TaskStatus is TaskStatus.SUCCESS, STATE_DEADLINE, f"task {task_id} succeeded")

    check()
