"""The world the scoped-token tests walk (docs/design/access.md): the worked example of
docs/guide/access.md as flows and tokens, an app on SQLite, and the tasks, alarms and schedules
of two teams, so that each case can ask what a scoped token gets of its own team's things and of
another's. The secret canary (a create_db task's admin_password) must never show."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from common.engine.document import Alarm
from common.engine.states import Phase
from tests.api.support import Api, open_api
from tests.support.doc_examples import blocks

PAGE = "docs/guide/access.md"
(FLOWS,) = blocks(PAGE, "A worked example", "yaml")
TOKENS, ACCESS = blocks(PAGE, "A worked example", "json")
OPS, PAYMENTS, DASHBOARDS = (entry["token"] for entry in json.loads(TOKENS))
SECRET = "canary-pw-0123456789!"
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass
class World:
    api: Api
    mine: str  # create_db, team payments: payments is an operator on it
    mine_report: str  # a report labelled team payments: payments reads it only
    theirs: str  # create_db, team shop
    theirs_waiting: str  # create_db, team shop, waiting behind `mine` for the lock db:pay1
    report: str  # a report with no label: dashboards', not payments'
    alarms: dict[str, str]  # what it is about -> alarm id

    def call(self, method: str, path: str, token: str = PAYMENTS, headers_extra: dict | None = None, **kw: Any):
        headers = {"Authorization": f"Bearer {token}", **(headers_extra or {})}
        return self.api.client.request(method.upper(), path, headers=headers, **kw)

    def version(self, task_id: str) -> int:
        return self.api.store.get(task_id).Version

    def untouched(self, task_id: str) -> None:
        """No change of the scoped tokens' (the lock relay and the outbox move tasks on their own)."""
        task = self.api.store.get(task_id)
        assert not task.CancelRequested and not task.Paused, task_id
        assert all(e.Actor not in ("payments", "dashboards") for e in task.History), task_id


@pytest.fixture
def world(tmp_path) -> Iterator[World]:
    app, store, broker = open_api(tmp_path, flows=FLOWS, api_tokens=TOKENS)
    with TestClient(app) as client:
        api = Api(client, store, broker)

        def create(task_type: str, token: str = OPS, **body: Any) -> str:
            answer = client.post("/api/v1/tasks", json={"task_type": task_type, **body},
                                 headers={"Authorization": f"Bearer {token}"})  # fmt: skip
            assert answer.status_code == 201, answer.text
            return str(answer.json()["task_id"])

        def db(name: str, team: str, **more: Any) -> str:
            return create("create_db", parameters={"name": name, "admin_password": SECRET}, labels={"team": team}, **more)

        mine, theirs = db("pay1", "payments"), db("shop1", "shop", idempotency_key="k-shop")
        theirs_waiting = db("pay1", "shop")
        mine_report, report = create("report", labels={"team": "payments"}), create("report")
        alarms = {}
        for about, task_id in (("mine", mine), ("theirs", theirs), ("nothing", None)):
            alarms[about] = f"alarm-{about}"
            store.add_alarm(Alarm(AlarmId=alarms[about], Kind="rollback_failed", Time=time.time(), Message="boom",
                                  TaskId=task_id, Cursor=0, Phase=Phase.ROLLBACK, Module="mysql",
                                  Command="noop_rollback"))  # fmt: skip
        for name, task_type, labels in (("pay-nightly", "create_db", {"team": "payments"}), ("shop-nightly", "report", {})):
            parameters = {"name": "nightly"} if task_type == "create_db" else {}
            made = client.post("/api/v1/schedules", headers={"Authorization": f"Bearer {OPS}"}, json={
                "name": name, "task_type": task_type, "parameters": parameters, "interval_seconds": 3600,
                "labels": labels})  # fmt: skip
            assert made.status_code == 201, made.text
        yield World(api, mine, mine_report, theirs, theirs_waiting, report, alarms)
    store.close()
    broker.close()


def not_found(world: World, response, path_of_nothing: str, method: str = "get", **kw: Any) -> None:
    """The answer is word for word the one for an id that names nothing."""
    nothing = world.call(method, path_of_nothing, **kw)
    assert response.status_code == 404 == nothing.status_code, (response.status_code, response.text)
    assert response.json() == nothing.json()


def no_secret(response) -> None:
    assert SECRET not in response.text
