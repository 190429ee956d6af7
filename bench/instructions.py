"""Instructions per step transition, counted by valgrind's callgrind: a figure that does not move
with the machine's load, where CPU time on a shared 2-core machine moves by 10-20% from run to run.

One process: async no-op three-step tasks (the flow of bench.kinds) submitted, their deferred
mark-sents settled, then drained by a module runtime on the in-process broker and a SQLite store.
Callgrind counts only the drain (switched on through `vgdb` once the tasks wait), for a
small and a large number of tasks: the difference, per transition, leaves out what does not
depend on the number (the runtime's start and stop). No pika and no RabbitMQ: the module's own
work per transition (claim, command, commit, log line, the hand-overs between its threads).

`python -m bench.instructions [small large]` (default 40 160; about two minutes), not part of
`make bench`: it needs valgrind, and runs some fifty times slower under it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from bench.callgrind_run import counted_run

STEPS = 3


def drain(tasks: int, control: Path) -> None:
    """The measured process (run under valgrind by `instructions`)."""
    from bench.kind_rounds import FLOWS
    from common.broker.inprocess import InProcessBroker
    from common.engine.states import FINAL_STATUSES
    from common.flows import parse_flows
    from common.logging import configure_logging
    from common.queues import module_queue
    from common.runtime.module import ModuleRuntime
    from common.settings import load_settings
    from common.store.sqlite.tasks import SqliteStore
    from oss.services.tasks import TaskService

    configure_logging("json", "info")
    endpoint = os.environ.get("BATON_BENCH_OTLP_ENDPOINT")
    if endpoint:  # traced as OSS and a module would be: the submissions, then every step
        from common.tracing.setup import configure_tracing

        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint  # the SDK's exporter reads it there
        # A request per 512 steps' spans, as at full speed: at the default delay (a request at
        # least every 5 s) a drain slowed fifty times by valgrind would send one every few steps.
        os.environ["OTEL_BSP_SCHEDULE_DELAY"] = "600000"
        configure_tracing("baton-asyncbench")
    path = control / "tasks.db"
    store, broker = SqliteStore(path), InProcessBroker()
    settings = load_settings(lease_seconds=600, redeliver_after_seconds=3600, relay_grace_seconds=2)
    service = TaskService(store, broker, parse_flows(FLOWS, "flows.yaml"), settings)
    broker.declare(module_queue("asyncbench"))
    for _ in range(tasks):
        service.submit("async_noop", {})
    watch = sqlite3.connect(path)  # counts rows: reading documents would be counted as the module's work
    final = ",".join(str(int(status)) for status in FINAL_STATUSES)
    while watch.execute("SELECT count(*) FROM tasks WHERE outbox_due IS NOT NULL").fetchone()[0]:
        time.sleep(0.2)  # OSS's deferred mark-sents, before the count starts
    if endpoint:  # the submissions' spans exported before the count starts too
        from opentelemetry import trace

        trace.get_tracer_provider().force_flush()  # type: ignore[attr-defined]
    runtime = ModuleRuntime(registry_ref="bench.kind_commands:asyncbench", settings=settings, store=store, broker=broker)
    (control / "ready.part").write_text(str(os.getpid()))
    (control / "ready.part").rename(control / "ready")  # seen whole: never an empty pid
    while not (control / "go").exists():
        time.sleep(0.1)
    runtime.start()
    while watch.execute(f"SELECT count(*) FROM tasks WHERE status IN ({final})").fetchone()[0] < tasks:
        # Counted too, and as often as the wall clock says: under load, a drain that takes longer
        # would count more looks. One a second keeps them a small share, whatever the load.
        time.sleep(1.0)
    runtime.stop(grace=5)
    watch.close()
    service.close()
    broker.close()
    store.close()


def counted(tasks: int, otlp_endpoint: str | None = None, keep: Path | None = None) -> int:
    """Instructions callgrind counted while `tasks` tasks drained; traced, exporting to
    `otlp_endpoint`, when one is given. `keep`: where to copy callgrind's profile."""
    with tempfile.TemporaryDirectory() as tmp:
        control = Path(tmp)
        env = {**os.environ, **({"BATON_BENCH_OTLP_ENDPOINT": otlp_endpoint} if otlp_endpoint else {})}
        program = [sys.executable, "-m", "bench.instructions", "--drain", str(tasks), str(control)]
        return counted_run(program, control, env=env, keep=keep)


def instructions_per_transition(small: int = 40, large: int = 160, otlp_endpoint: str | None = None) -> float:
    return (counted(large, otlp_endpoint) - counted(small, otlp_endpoint)) / ((large - small) * STEPS)


def main() -> None:
    if sys.argv[1:2] == ["--drain"]:
        drain(int(sys.argv[2]), Path(sys.argv[3]))
        return
    if shutil.which("valgrind") is None or shutil.which("vgdb") is None:
        print("bench.instructions needs valgrind (vgdb): not installed here")
        return
    small, large = (int(n) for n in sys.argv[1:3]) if len(sys.argv) >= 3 else (40, 160)
    per = instructions_per_transition(small, large)
    print(f"an async no-op transition in one module process (in-process broker, SQLite): "
          f"{per / 1e6:.2f} M instructions ({small} and {large} three-step tasks)")


if __name__ == "__main__":
    main()
