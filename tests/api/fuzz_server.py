"""The API as the fuzzers meet it: tasks in every state an operator action meets, and an alarm,
so that a share of the generated requests reach past 404.

`python -m tests.api.fuzz_server DIR PORT` serves it as a real process (for the schemathesis
CLI, which runs every phase: examples, coverage, fuzzing and stateful); seeded_api() gives the
app to call in-process.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from common.engine.document import Alarm
from common.store.sqlite.tasks import SqliteStore
from tests.api.support import FAIL, FLOWS, OK, Api, open_api

ALARM_ID = "alarm-1"
# A task type whose lock key names a parameter not declared required: the document must mark it
# required, as the check does.
FUZZ_FLOWS = FLOWS + """
  resize:
    parameters:
      cluster: {type: string, pattern: "^[a-z]{1,8}$"}
      size: {type: integer, minimum: 1, maximum: 8, default: 1}
    lock: {key: "cluster:{cluster}"}
    steps:
      - name: only
        normal: {module: monitor, command: noop}
"""


def seeded_api(directory: Path) -> tuple[Any, SqliteStore, dict[str, list[str]]]:
    """The app, its store, and the ids and names worth trying in paths and bodies."""
    app, store, broker = open_api(directory, FUZZ_FLOWS)
    context = app.state.baton
    context.service.declare_queues()  # what the lifespan does; an in-process caller skips it
    driver = Api(None, store, broker)  # type: ignore[arg-type]  (no client needed to drive)
    task_ids = [context.service.submit("create_db", {"name": "fresh"}).task.TaskId]
    for make in (_running, _rolled_back, _rollback_failed, _succeeded):
        task_ids.append(make(driver, context.service.submit("create_db", {"name": "x"}).task.TaskId))
    store.add_alarm(Alarm(AlarmId=ALARM_ID, Kind="dead_letter", Time=1.0, Message="m"))
    known = {"task_id": task_ids, "alarm_id": [ALARM_ID], "task_type": list(context.flows.task_types),
             "ended_task_id": [task_ids[2], task_ids[4]]}  # rolled back, succeeded: their streams end  # fmt: skip
    return app, store, known


def _running(api: Api, task_id: str) -> str:
    api.step(task_id, finish=False)
    return task_id


def _rolled_back(api: Api, task_id: str) -> str:
    api.step(task_id)
    for result in (FAIL, OK, OK):
        api.step(task_id, result)
    return task_id


def _rollback_failed(api: Api, task_id: str) -> str:
    for result in (OK, FAIL, FAIL):
        api.step(task_id, result)
    return task_id


def _succeeded(api: Api, task_id: str) -> str:
    api.step(task_id)
    api.step(task_id)
    return task_id


if __name__ == "__main__":
    import uvicorn

    served, _store, _known = seeded_api(Path(sys.argv[1]))
    uvicorn.run(served, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
