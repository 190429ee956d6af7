"""The monitor scrubs every alarm with its task's secrets before it stores, logs or sends it, even
one whose raiser did not (defence in depth: a module of someone else's, an older baton)."""

from __future__ import annotations

import structlog

from common.engine.document import Alarm
from common.queues import ALARM_QUEUE
from common.settings import load_settings
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Timing, create_task
from modules.monitor.alarms import alarm_consumer
from tests.e2e.test_modules import HookServer
from tests.support.builders import make_step
from tests.support.cluster import wait_until

SECRET = "an-admin-password-42"


def test_an_alarm_quoting_a_secret_is_stored_logged_and_sent_without_it(tmp_path, monkeypatch):
    hook = HookServer()
    monkeypatch.setenv("BATON_MONITOR_WEBHOOK_URL", hook.url)
    store = SqliteStore(tmp_path / "baton.db")
    task = create_task(task_type="t", steps=[make_step("a")], parameters={"admin_password": SECRET},
                       timing=Timing(1.0), secret_parameters=["admin_password"])  # fmt: skip
    store.insert(task)
    consumers = alarm_consumer(load_settings(), store)
    receive = consumers[ALARM_QUEUE]
    alarm = Alarm(AlarmId="a-1", Kind="rollback_failed", Time=2.0, TaskId=task.TaskId,
                  Message=f"clean_instance failed: DROP USER refused for {SECRET} (mysql://root:pw@db)")  # fmt: skip
    try:
        with structlog.testing.capture_logs() as logs:
            receive(alarm.model_dump_json().encode())
        wait_until(lambda: hook.bodies, 10, "the webhook")
        stored = store.list_alarms()[0]
        assert stored.Message == "clean_instance failed: DROP USER refused for *** (mysql://root:***@db)"
        assert hook.bodies[0]["alarm"]["Message"] == stored.Message
        assert [e["message"] for e in logs if e["event"] == "ALARM"] == [stored.Message]
    finally:
        consumers.close()  # its webhook thread ends before the store closes
        hook.close()
        store.close()
