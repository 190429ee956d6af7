"""What a task waits for, in its gate's words (`WaitShown` of the task view), and what a held run
waits for (`RunWaits`): the console draws its "Waiting for" line and its timeline from these
alone, so a new gate needs no code there."""

from __future__ import annotations

import time

from common.engine.core.entries import Timing
from common.engine.document import StepMessage
from common.engine.gates.drain.changes import drain_hold
from common.store.tasks.mutate import mutate
from tests.api.support import READER


def test_a_task_waiting_for_another_names_it_as_a_link_and_since_when(api):
    running = api.create(parameters={"name": "db1"})["task_id"]
    waiting = api.create(parameters={"name": "db2"}, after_task=running)["task_id"]
    shown = api.get(f"/api/v1/tasks/{waiting}", token=READER).json()
    since = shown["WaitingFor"]["Since"]
    assert shown["WaitShown"] == {"Kind": "task", "Style": "", "Words": [
        {"Kind": "text", "Value": "task "}, {"Kind": "task", "Value": running},
        {"Kind": "text", "Value": " to succeed, since "}, {"Kind": "time", "Value": since}]}
    free = api.get(f"/api/v1/tasks/{running}", token=READER).json()
    assert free["WaitShown"] is None and free["RunWaits"] == {}  # it waits for nothing


def test_a_run_a_drained_module_holds_shows_the_module_strong(api):
    task_id = api.create()["task_id"]
    task = api.store.get(task_id)
    (run,) = task.Runs
    message = StepMessage(TaskId=task_id, Cursor=0, Type=run.Phase, Module="resource",
                          Command=task.Steps[0].NormalCommand, Timeout=5, Retry=0, DispatchId=run.DispatchId,
                          Attempt=run.Attempt)
    now = time.time()
    mutate(api.store, task_id, lambda t: drain_hold(t, message, "resource", "olga", "deploy 2.0", Timing(now)))
    view = api.get(f"/api/v1/tasks/{task_id}", token=READER).json()
    assert view["RunWaits"] == {run.DispatchId: "held: module resource is drained; it runs once the module is undrained"}
    shown = view["WaitShown"]
    assert shown["Kind"] == "drain" and shown["Style"] == "drained"
    assert [(w["Kind"], w["Value"]) for w in shown["Words"]] == [
        ("text", "module "), ("strong", "resource"), ("text", " to be undrained (drained since "), ("time", now),
        ("text", ")")]
