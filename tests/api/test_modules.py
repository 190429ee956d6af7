"""Announced modules over REST, the task view's "no live module serves queue X", and the
sweeper's unserved-queue alarm: one per queue, through the monitor when it is live."""

from __future__ import annotations

import time

from common.engine.document import Alarm
from common.engine.states import Phase
from common.queues import ALARM_QUEUE
from common.store.sqlite.drains import SqliteModuleDrains
from common.store.side.modules import ModuleRegistration
from common.store.sqlite.modules import SqliteModuleRegistry
from common.relay.sweeper import SweepConfig, Sweeper
from common.relay.unserved import UnservedWatch
from tests.api.support import READER, auth
from tests.api.test_step_items import run_fan_out


def announce(api, module: str, worker: str, age: float = 0.0, commands=("noop", "noop_rollback")) -> None:
    registry = SqliteModuleRegistry(api.store.path)
    now = time.time()
    kinds = {c: "async" if c == "noop" else "process" for c in commands}
    registry.announce(ModuleRegistration(WorkerId=worker, Module=module, Commands=list(commands), Kinds=kinds,
                                         Version="1.2", Host="h", Pid=7, StartedAt=now - 60, HeartbeatAt=now - age))  # fmt: skip
    registry.close()


def test_live_modules_are_listed_with_commands_workers_and_heartbeats(api):
    announce(api, "mysql", "mysql@h:1")
    announce(api, "resource", "resource@h:2", age=3600)  # stopped renewing an hour ago
    items = api.get("/api/v1/modules", token=READER).json()["items"]
    assert [(m["module"], m["live"], m["commands"]) for m in items] == [("mysql", True, ["noop", "noop_rollback"])]
    assert items[0]["kinds"] == {"noop": "async", "noop_rollback": "process"}
    assert items[0]["workers"][0]["worker_id"] == "mysql@h:1" and items[0]["workers"][0]["version"] == "1.2"
    everything = api.get("/api/v1/modules", token=READER, stale="true").json()["items"]
    assert [(m["module"], m["live"]) for m in everything] == [("mysql", True), ("resource", False)]


def test_a_task_waiting_on_a_queue_nobody_serves_says_so(api):
    task_id = api.create()["task_id"]  # step 0 waits in queue "resource"
    assert api.get(f"/api/v1/tasks/{task_id}").json()["Waiting"] == "no live module serves queue resource"
    announce(api, "resource", "resource@h:1")
    assert api.get(f"/api/v1/tasks/{task_id}").json()["Waiting"] is None


def watch(api, threshold: float = 0.0) -> UnservedWatch:
    return UnservedWatch(api.store, SqliteModuleRegistry(api.store.path), api.broker, threshold, 30.0,
                         SqliteModuleDrains(api.store.path))


def test_one_alarm_per_unserved_queue_stored_when_no_monitor_is_live(api):
    first = api.create()["task_id"]
    api.create(parameters={"name": "db2"})
    assert watch(api, threshold=3600)(time.time()) == []  # not waiting long enough yet
    (alarm,) = watch(api)(time.time())
    assert alarm.Kind == "no_live_module" and alarm.Module == "resource" and alarm.TaskId == first
    assert "no live module serves queue resource: 2 step(s) waiting" in alarm.Message
    assert watch(api)(time.time()) == []  # open already: not raised again
    assert [a.AlarmId for a in api.store.list_alarms()] == [alarm.AlarmId]
    announce(api, "resource", "resource@h:1")
    api.store.acknowledge_alarm(alarm.AlarmId, by="olga", now=time.time())
    assert watch(api)(time.time()) == []  # served now


def test_a_drained_module_s_queue_raises_no_alarm_until_it_is_undrained(api):
    api.create()  # step 0 waits in queue "resource", which no live module serves
    assert api.client.post("/api/v1/modules/resource/drain", json={"reason": "deploy 2.0"},
                           headers=auth()).status_code == 200
    assert watch(api)(time.time()) == []  # down on purpose
    assert api.client.post("/api/v1/modules/resource/undrain", json={"reason": "deployed"},
                           headers=auth()).status_code == 200
    (alarm,) = watch(api)(time.time())
    assert alarm.Module == "resource"


def test_the_alarm_goes_through_the_monitor_when_it_is_live(api):
    api.create()
    announce(api, "monitor", "monitor@h:1")
    (alarm,) = watch(api)(time.time())
    message = api.broker._pop(ALARM_QUEUE)  # what the monitor would consume
    assert message is not None and Alarm.model_validate_json(message.body) == alarm
    assert api.store.list_alarms() == []  # the monitor stores it (and sends the webhook)


def test_items_kept_in_records_waiting_on_a_queue_nobody_serves_raise_the_alarm(api, monkeypatch):
    """The runs of a records step's items are not in the task document: the sweeper sees them
    when it publishes them again, and the watch raises the queue's alarm at that round."""
    simulator = run_fan_out(api, "fleet-1", True, monkeypatch, steps=3)  # step a done: 4 items dispatched
    module = api.store.get("fleet-1").Steps[1].module(Phase.NORMAL)
    assert module not in {"resource", "monitor"}
    sweeper_watch = watch(api, threshold=60)
    sweeper = Sweeper(api.store, api.broker, SweepConfig(lease=30, redeliver_after=60, relay_grace=5, interval=1),
                      on_unclaimed_items=sweeper_watch.note_unclaimed_items, jobs=[sweeper_watch])
    try:
        report = sweeper.sweep_once()  # the task's clock is long past: every item's dispatch is due again
        assert report.redispatched == 4 and len(report.unclaimed_items) == 4  # max_parallel 4
        (alarm,) = api.store.list_alarms()
        assert alarm.Kind == "no_live_module" and alarm.Module == module and alarm.TaskId == "fleet-1"
        assert f"no live module serves queue {module}: 4 step(s) waiting" in alarm.Message
        assert sweeper.sweep_once().unclaimed_items == []  # backing off: not published again yet
        assert api.store.list_alarms() == [alarm]
    finally:
        sweeper.close()
        simulator.items.close()
