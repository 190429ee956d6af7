"""The logging of every step, made cheaper without losing a line or a field: a hot-path logger
assembled once per configuration (and again after any reconfiguration), step fields bound with
tokens, and every line of a step through a real module runtime carrying the step's fields."""

from __future__ import annotations

import json

import pytest
import structlog

from common.broker.inprocess import InProcessBroker
from common.flows import parse_flows
from common.logging import HotPathLogger, bound_fields, configure_logging
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.engine.states import FINAL_STATUSES
from common.store.sqlite.tasks import SqliteStore
from oss.services.tasks import TaskService
from tests.support.cluster import wait_until

STEP_FIELDS = {"task_id", "task_type", "step", "item", "phase", "attempt", "module", "command"}


@pytest.fixture
def restore_logging():
    yield
    configure_logging()  # the test session's own set-up again


def test_a_hot_path_logger_follows_every_reconfiguration(capsys, restore_logging):
    log = HotPathLogger("hot")
    configure_logging("json", "info")
    log.info("first", n=1)
    log.debug("dropped at info")
    [line] = capsys.readouterr().err.splitlines()
    assert json.loads(line) | {"timestamp": None} == {"event": "first", "n": 1, "level": "info", "timestamp": None}

    configure_logging("console", "debug")
    log.debug("now shown", n=2)
    text = capsys.readouterr().err
    assert "now shown" in text and not text.lstrip().startswith("{")

    with structlog.testing.capture_logs() as captured:
        log.warning("captured", n=3)
    assert captured == [{"event": "captured", "n": 3, "log_level": "warning"}]
    assert capsys.readouterr().err == ""

    configure_logging("json", "error")
    log.warning("below the level")
    log.error("shown", password="hunter22")
    [line] = capsys.readouterr().err.splitlines()
    assert json.loads(line)["event"] == "shown" and "hunter22" not in line


def test_a_hot_path_logger_is_assembled_once_per_configuration(restore_logging):
    log = HotPathLogger("hot")
    configure_logging("json", "info")
    log.debug("x")
    made = log._made[1]
    log.info("y")
    assert log._made[1] is made
    configure_logging("json", "info")
    log.debug("z")
    assert log._made[1] is not made


def test_bound_fields_are_on_every_line_inside_and_restored_after():
    with structlog.testing.capture_logs(processors=[structlog.contextvars.merge_contextvars]) as captured:
        log = structlog.get_logger("t")
        with bound_fields(task_id="outer", step=0):
            with bound_fields(task_id="inner", phase="normal"):
                log.info("inside")
                with pytest.raises(RuntimeError), bound_fields(task_id="raised"):
                    raise RuntimeError
                log.info("after a raise")
            log.info("outer again")
        log.info("outside")
    fields = [{k: v for k, v in e.items() if k in {"task_id", "step", "phase"}} for e in captured]
    assert fields == [
        {"task_id": "inner", "step": 0, "phase": "normal"},
        {"task_id": "inner", "step": 0, "phase": "normal"},
        {"task_id": "outer", "step": 0},
        {},
    ]


FLOWS = """
version: 1
task_types:
  two:
    steps:
      - name: a
        normal: {module: mysql, command: noop}
      - name: b
        normal: {module: mysql, command: noop}
"""


def test_every_step_line_of_a_module_carries_the_steps_fields(tmp_path):
    store = SqliteStore(str(tmp_path / "baton.db"))
    broker = InProcessBroker()
    settings = load_settings(concurrency=1, lease_seconds=5)
    service = TaskService(store, broker, parse_flows(FLOWS, "flows.yaml"), settings)
    broker.declare(module_queue("mysql"))
    runtime = ModuleRuntime(registry_ref="modules.mysql.commands:registry", settings=settings, store=store, broker=broker)
    runtime.start()
    try:
        with structlog.testing.capture_logs(processors=[structlog.contextvars.merge_contextvars]) as captured:
            task = service.submit("two", {}).task
            wait_until(lambda: store.get(task.TaskId).TaskStatus in FINAL_STATUSES, 20, "final")
            wait_until(lambda: sum(e["event"] == "step finished" for e in captured) == 2, 10, "both lines")
    finally:
        runtime.stop(grace=1)
        service.close()
        broker.close()
        store.close()
    finished = [e for e in captured if e["event"] == "step finished"]
    assert [(e["task_id"], e["task_type"], e["step"], e["phase"], e["attempt"], e["module"], e["command"])
            for e in finished] == [(task.TaskId, "two", n, "normal", 1, "mysql", "noop") for n in (0, 1)]
    assert all(STEP_FIELDS <= e.keys() and e["ok"] is True for e in finished)
    # Once the step is done, its fields are off the threads that ran it.
    assert structlog.contextvars.get_contextvars().keys().isdisjoint(STEP_FIELDS)


def test_threads_binding_a_field_for_the_first_time_at_once_each_restore_their_own(monkeypatch, restore_logging):
    """structlog makes the variable behind a field the first time the field is bound, and two
    threads that do so at once may each make one: the later replaces the earlier in structlog's
    registry. A module's first deliveries after a start bind the step fields on several threads
    at once; the thread whose variable was replaced must still restore its own, not fail."""
    import contextvars
    import threading
    import time
    import types

    def slow_var(*args, **kwargs):  # widens the window between structlog's lookup and its store
        time.sleep(0.02)
        return contextvars.ContextVar(*args, **kwargs)

    monkeypatch.setattr(structlog.contextvars, "contextvars", types.SimpleNamespace(ContextVar=slow_var, copy_context=contextvars.copy_context))
    configure_logging("json", "info")
    started, bound, failures, lines = threading.Barrier(4), threading.Barrier(4), [], []

    def bind_and_log(n: int) -> None:
        started.wait()
        try:
            with bound_fields(first_bound_here=n):
                bound.wait()  # every thread's variable is made before any block ends
                lines.append(structlog.contextvars.get_contextvars().get("first_bound_here"))
        except Exception as exc:  # noqa: BLE001 - what the thread raised is the finding
            failures.append(repr(exc))

    threads = [threading.Thread(target=bind_and_log, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(lines) == [0, 1, 2, 3]  # each thread's lines carried its own value
    assert "first_bound_here" not in structlog.contextvars.get_contextvars()
