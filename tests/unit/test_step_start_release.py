"""A delivery's slot is freed once: by the end of its command once the command started, else
where its start gave up. Something raising on the claiming thread after the command started
(leaving a block of the step's context, as a log field's reset once did) must not free it a
second time: the module would count one more slot than it has, for good."""

from __future__ import annotations

import contextlib
import threading

from common.broker.inprocess import InProcessBroker
from common.engine.states import FINAL_STATUSES
from common.flows import parse_flows
from common.queues import module_queue
from common.runtime import step_handler
from common.runtime.module import ModuleRuntime
from common.settings import load_settings
from common.store.sqlite.tasks import SqliteStore
from oss.services.tasks import TaskService
from tests.support.cluster import wait_until

FLOWS = """
version: 1
task_types:
  one:
    steps:
      - name: a
        normal: {module: mysql, command: noop}
"""


def test_a_raise_on_the_claiming_thread_after_the_command_started_frees_its_slot_once(tmp_path, monkeypatch):
    hidden_values, raised = step_handler.hidden_values, []

    @contextlib.contextmanager
    def raising_on_exit(values):  # the claim's block, the command started inside it; once
        with hidden_values(values):
            yield
        if not raised:
            raised.append(True)
            raise RuntimeError("leaving the step's block failed")

    monkeypatch.setattr(step_handler, "hidden_values", raising_on_exit)
    store, broker = SqliteStore(str(tmp_path / "baton.db")), InProcessBroker()
    settings = load_settings(concurrency=1, lease_seconds=5)
    service = TaskService(store, broker, parse_flows(FLOWS, "flows.yaml"), settings)
    broker.declare(module_queue("mysql"))
    runtime = ModuleRuntime(registry_ref="modules.mysql.commands:registry", settings=settings, store=store, broker=broker)
    releases: list[str] = []
    finished = threading.Event()
    release, finish = runtime._dispatcher.release, runtime._handler._finish

    def counted_release(kind: str) -> None:
        releases.append(kind)
        release(kind)

    def noted_finish(*args, **kwargs) -> None:
        try:
            finish(*args, **kwargs)
        finally:
            finished.set()  # its slot is freed by now (the finish's last act)

    runtime._dispatcher.release, runtime._handler._finish = counted_release, noted_finish
    runtime.start()
    try:
        task = service.submit("one", {}).task
        wait_until(lambda: store.get(task.TaskId).TaskStatus in FINAL_STATUSES, 30, "final")
        assert finished.wait(30)
        assert len(releases) == 1 and runtime._dispatcher.slots.in_use() == 0, releases
    finally:
        runtime.stop(grace=1)
        service.close()
        broker.close()
        store.close()
