"""`baton watch --api`: a task followed through the API's event stream over real HTTP (uvicorn)."""

from __future__ import annotations

import json
import threading
from typing import Any

from click.testing import CliRunner
from fastapi.testclient import TestClient

from oss.cli.tasks import watch
from tests.api.support import FAIL, OPERATOR, READER, Api, open_api
from tests.support.cluster import STATE_DEADLINE
from tests.support.served import served


def test_watch_through_the_api_prints_every_event_then_exits_with_the_outcome(tmp_path: Any) -> None:
    app, store, broker = open_api(tmp_path)
    with served(app) as url, TestClient(app) as client:
        api = Api(client, store, broker)
        task_id = api.create()["task_id"]
        result: list[Any] = []
        watcher = threading.Thread(target=lambda: result.append(
            CliRunner().invoke(watch, [task_id, "--api", url, "--token", READER, "--json"])))  # fmt: skip
        watcher.start()  # it prints the events from the first, whenever it connects
        api.step(task_id)
        api.step(task_id, FAIL)  # step 1 fails: both steps are rolled back
        api.step(task_id)
        api.step(task_id)
        watcher.join(timeout=STATE_DEADLINE)  # a state: the watch ended with the task
        assert not watcher.is_alive()
        outcome = result[0]
        assert outcome.exception is None or isinstance(outcome.exception, SystemExit), outcome.exception
        assert outcome.exit_code == 1, outcome.output  # rolled back: the task failed
        lines = outcome.output.strip().splitlines()
        events = [json.loads(line)["Event"] for line in lines if line.startswith('{"TaskId"')]
        task = store.get(task_id)
        assert events == [e.Event for e in task.History], outcome.output  # every event, in order, once
        missing = CliRunner().invoke(watch, ["nope", "--api", url, "--token", OPERATOR])
        assert missing.exit_code == 3 and "no such task" in missing.output and "nope" not in missing.output
        refused = CliRunner().invoke(watch, [task_id, "--api", url, "--token", "wrong"])
        assert refused.exit_code == 2 and "401" in refused.output
    store.close()
    broker.close()
