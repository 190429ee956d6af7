"""Running the parts of baton until a signal, and the all-in-one demo."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from common.background import BACKGROUND_MARGIN_SECONDS, join_all
from common.flows import load_flows
from common.engine.views import since
from common.secrets.task_views import masked_task
from common.queues import module_queue
from common.runtime.module import ModuleRuntime
from common.settings import Settings
from common.engine.states import FINAL_STATUSES, TaskStatus
from oss.cli.render import event_line, task_summary
from oss.wiring import build, build_sweeper

BUILTIN_MODULES = ("resource", "mysql", "monitor")


def run_demo(settings: Settings, task_type: str, echo: Callable[[str], None]) -> int:
    """Every built-in module, a sweeper and OSS in one process, on the configured store and broker.

    Same module runtime, routing and protocol as the separate processes of a deployment; each
    module still runs its commands in child processes.
    """
    Path("var").mkdir(exist_ok=True)
    parts = build(settings, indexes="create")
    flows = load_flows(settings.flows_path)
    queues = {module_queue(m) for m in flows.modules()}
    runtimes = [
        ModuleRuntime(
            registry_ref=f"modules.{name}.commands:registry",
            settings=settings,
            store=parts.store,
            broker=parts.broker,
            queues_to_declare=queues,
        )
        for name in BUILTIN_MODULES
    ]
    stop = threading.Event()
    sweeper = build_sweeper(settings, parts.store, parts.broker, parts.service)
    sweeper_thread = threading.Thread(target=sweeper.run, args=(stop,), name="baton-sweeper", daemon=True)
    started: list[ModuleRuntime] = []  # a runtime that failed to start has nothing to stop
    try:
        for runtime in runtimes:
            runtime.start()
            started.append(runtime)
        sweeper_thread.start()
        parts.service.declare_queues()
        # A task type that declares its parameters gets only its defaults (or says what it lacks).
        free_form = flows.get(task_type).parameter_schema is None
        task = parts.service.submit(task_type, {"requested_by": "baton demo"} if free_form else {}).task
        echo(f"submitted {task_type} task {task.TaskId}")
        seen = 0
        while True:
            current = parts.store.get(task.TaskId)
            task = masked_task(since(parts.store, current, seen))
            for event in task.History:
                echo(event_line(task, event))
            seen = current.history_count
            if task.TaskStatus in FINAL_STATUSES and not task.Runs:
                break
            stop.wait(0.05)
        echo(task_summary(task))
        return 0 if task.TaskStatus is TaskStatus.SUCCESS else 1
    finally:
        stop.set()
        for runtime in started:
            runtime.stop(grace=5)
        if join_all([sweeper_thread if sweeper_thread.is_alive() else None], 5 + BACKGROUND_MARGIN_SECONDS):
            parts.close()
