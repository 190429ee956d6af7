"""The API under test: a FastAPI TestClient on a SQLite store and the in-process broker, with a
flows file of its own, plus helpers that move tasks along as a module would (pure transitions
applied to the store), so every state an operator meets can be reached without processes."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from common.broker.inprocess import InProcessBroker
from common.flows import load_flows
from common.engine.document import StepMessage, Task
from common.engine.states import ResultCode
from common.store.tasks.mutate import mutate
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import AttemptResult, Refusal, Timing, claim, finish_attempt
from oss.api import create_app
from oss.settings import load_oss_settings
from tests.support.builders import only_run
from tests.support.cluster import STATE_DEADLINE

FLOWS = """
version: 1
defaults: {timeout: 5, retry: 0}
task_types:
  create_db:
    description: A database on two modules.
    parameters:
      name: {type: string, required: true, pattern: "^[a-z][a-z0-9_]{0,31}$", description: "instance name"}
      cpu: {type: integer, minimum: 1, maximum: 64, default: 1}
      admin_password: {type: string, secret: true, min_length: 12}
      tier: {type: string, enum: [small, large]}
    steps:
      - name: reserve
        normal:   {module: resource, command: noop}
        rollback: {module: resource, command: noop_rollback}
      - name: create
        normal:   {module: mysql, command: noop}
        rollback: {module: mysql, command: noop_rollback}
  free_form:
    steps:
      - name: only
        normal: {module: monitor, command: noop}
"""
OPERATOR = "operator-token-0123456789"
SUBMITTER = "submitter-token-0123456789"
READER = "reader-token-0123456789"
TOKENS = f"olga:{OPERATOR}:operator,sam:{SUBMITTER}:submit,rita:{READER}:read"
SECRET = "s3cret-admin-pw!"
OK = AttemptResult(ResultCode.OK)
FAIL = AttemptResult(ResultCode.FAILED, "boom")


def auth(token: str = OPERATOR) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Api:
    client: TestClient
    store: SqliteStore
    broker: InProcessBroker

    def create(self, task_type: str = "create_db", token: str = OPERATOR, **body: Any) -> dict:
        body.setdefault("parameters", {"name": "db1"} if task_type == "create_db" else {})
        response = self.client.post("/api/v1/tasks", json={"task_type": task_type, **body}, headers=auth(token))
        assert response.status_code in (200, 201), response.text
        return response.json()

    def act(self, task_id: str, action: str, reason: str = "because", token: str = OPERATOR):
        return self.client.post(f"/api/v1/tasks/{task_id}/{action}", json={"reason": reason}, headers=auth(token))

    def get(self, path: str, token: str = OPERATOR, **params: Any):
        return self.client.get(path, params=params, headers=auth(token))

    def step(self, task_id: str, result: AttemptResult = OK, *, finish: bool = True) -> Task:
        """Claim the task's active run as a module would, and (unless finish=False) end it."""
        def claimed(task: Task) -> Task | Refusal:
            run = only_run(task)
            assert run is not None
            step = task.Steps[run.Cursor]
            message = StepMessage(
                TaskId=task.TaskId, Cursor=run.Cursor, Type=run.Phase,
                Module=step.module(run.Phase), Command=step.command(run.Phase),
                Timeout=step.timeout(run.Phase), Retry=step.retry(run.Phase),
                DispatchId=run.DispatchId, Attempt=run.Attempt,
            )  # fmt: skip
            return claim(task, message, "worker", Timing(time.time()))

        task = _written(mutate(self.store, task_id, claimed))
        if not finish:
            return task
        dispatch = only_run(task).DispatchId  # type: ignore[union-attr]
        return _written(mutate(self.store, task_id, lambda t: finish_attempt(t, dispatch, "worker", result, Timing(time.time()))))

    def rolled_back(self) -> str:
        """A create_db task whose step 1 failed and was rolled back, like step 0."""
        task_id = self.create()["task_id"]
        self.step(task_id)
        for result in (FAIL, OK, OK):
            self.step(task_id, result)
        return task_id

    def rollback_failed(self) -> str:
        task_id = self.create()["task_id"]
        self.step(task_id)
        self.step(task_id, FAIL)
        self.step(task_id, FAIL)  # the rollback of step 1 fails
        return task_id


def _written(result: Task | Refusal) -> Task:
    assert not isinstance(result, Refusal), result
    return result


def open_api(tmp_path: Path, flows: str = FLOWS, **settings: Any) -> tuple[Any, SqliteStore, InProcessBroker]:
    flows_path = tmp_path / "flows.yaml"
    flows_path.write_text(flows)
    store = SqliteStore(tmp_path / "api.db")
    broker = InProcessBroker()
    options = {"store_url": f"sqlite:///{tmp_path / 'api.db'}", "flows_path": str(flows_path),
               "api_tokens": TOKENS, "oss_sweeper": False, **settings}  # fmt: skip
    app = create_app(load_oss_settings(**options), store=store, broker=broker, flows=load_flows(flows_path))
    return app, store, broker


WIDE_FLOWS = """
version: 1
task_types:
  wide:
    parameters:
      nodes: {type: array, required: true}
    steps:
      - name: each
        for_each: nodes
        max_parallel: 8
        normal:   {module: prop, command: n0}
        rollback: {module: prop, command: u0}
"""


@contextlib.contextmanager
def wide_task_done(tmp_path: Path, items: int) -> Iterator[tuple[TestClient, SqliteStore, str]]:
    """A `wide` task (WIDE_FLOWS: a for_each over `items` nodes) submitted over the API and run
    to its end by the real module runtime (tests.support.property_commands) on the in-process
    broker: the client, the store and the task's id, while the client still serves."""
    from common.engine.states import FINAL_STATUSES
    from common.queues import module_queue
    from common.runtime.module import ModuleRuntime
    from common.settings import load_settings

    app, store, broker = open_api(tmp_path, flows=WIDE_FLOWS)
    broker.declare(module_queue("prop"))
    runtime = ModuleRuntime(registry_ref="tests.support.property_commands:registry",
                            settings=load_settings(concurrency=4, store_url=f"sqlite:{tmp_path / 'api.db'}"),
                            store=store, broker=broker)  # fmt: skip
    runtime.start()
    try:
        with TestClient(app) as client:
            created = client.post("/api/v1/tasks", json={"task_type": "wide", "parameters": {"nodes": list(range(items))}},
                                  headers=auth())  # fmt: skip
            assert created.status_code == 201, created.text
            task_id = created.json()["task_id"]
            deadline = time.monotonic() + STATE_DEADLINE
            while store.get(task_id).TaskStatus not in FINAL_STATUSES:
                assert time.monotonic() < deadline, "the task did not end"
                time.sleep(0.1)
            yield client, store, task_id
    finally:
        runtime.stop(grace=2)
        broker.close()
        store.close()
