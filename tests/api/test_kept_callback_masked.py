"""A callback's answer that comes while its command still runs is kept on the run until the
command returns (common/engine/kinds/command/callback/changes.py): another system's output,
shown by every view of the task masked as the task's own parameters are (secret-looking keys,
their values wherever quoted, URL passwords), and the answer to a repeated submission is
task_view's."""

from __future__ import annotations

import time

from common.engine.core.entries import Timing
from common.engine.kinds.command.callback.changes import answer_callback
from common.engine.kinds.command.callback.fields import CallbackWait
from common.secrets.task_views import masked_runs
from common.store.tasks.mutate import mutate
from oss.api.created_view import created_answer
from oss.api.schemas import TaskCreated
from oss.api.views import task_view
from tests.api.support import READER, SUBMITTER, auth

CANARY = "kept-canary-7f3a9"
OUTPUT = {"password": CANARY, "dsn": "mysql://app:url-pw-7f3a9@db/x", "note": f"the new one is {CANARY}", "size": 3}
HASH = "0" * 64


def _kept(api, task_id: str) -> None:
    api.step(task_id, finish=False)  # its command runs

    def asked_for_a_callback(task):
        task.Runs[0].Callback = CallbackWait(Hash=HASH)  # as the command's token request leaves it
        return task

    mutate(api.store, task_id, asked_for_a_callback)

    def answered(task):
        taken = answer_callback(task, HASH, "succeed", OUTPUT, f"done, {CANARY}", True, Timing(time.time()))
        assert taken.task is not None and taken.task.Runs[0].Callback.Kept is not None
        return taken.task

    mutate(api.store, task_id, answered)


def test_a_kept_callback_answer_is_masked_in_every_view(api):
    created = api.client.post("/api/v1/tasks", json={"task_type": "free_form", "idempotency_key": "k"},
                              headers=auth(SUBMITTER))  # fmt: skip
    task_id = created.json()["task_id"]
    _kept(api, task_id)
    read = api.client.get(f"/api/v1/tasks/{task_id}", headers=auth(READER))
    again = api.client.post("/api/v1/tasks", json={"task_type": "free_form", "idempotency_key": "k"},
                            headers=auth(SUBMITTER))  # fmt: skip
    assert read.status_code == 200 and again.status_code == 200
    for text in (read.text, again.text):
        assert CANARY not in text and "url-pw-7f3a9" not in text
    assert read.json()["Runs"][0]["Callback"]["Kept"]["Output"]["password"] == "***"
    task, now = api.store.get(task_id), time.time()
    old = TaskCreated(task_id=task_id, created=False, location="/x", task=task_view(task, now))
    assert created_answer(task, now, False, "/x") == old.model_dump_json()


def test_an_item_run_s_kept_answer_is_masked_too(api):
    task_id = api.create(task_type="free_form")["task_id"]
    _kept(api, task_id)
    run = api.store.get(task_id).Runs[0]
    shown = masked_runs([run])[0].Callback.Kept
    assert shown.Output["password"] == "***" and CANARY not in shown.Output["note"] and "url-pw" not in shown.Output["dsn"]
    assert run.Callback.Kept.Output == OUTPUT  # the run itself keeps it, for the command
