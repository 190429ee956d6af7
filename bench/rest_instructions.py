"""Instructions per REST submission, counted by valgrind's callgrind, by part: a figure the
machine's load does not move.

One process: the OSS app (oss.api.create_app) on a SQLite store and the in-process broker, with
a three-step task type (bench.engine's). A part runs in a loop of submissions, then waits for
the deferred mark-sents it owes (no module claims the first steps, so each is a write, as in
`python -m bench.api`); callgrind counts the loop and the marks. The figure per submission is the
difference between a small and a large loop, which leaves out what does not depend on the
number. The parts, each one loop of its own:

- app: the whole request through the ASGI app, driven directly (no uvicorn, no socket):
  middlewares, routing, the token, the body's validation, the submission and the answer;
- submit: TaskService.submit alone (schema check, new task, insert, publish, deferred mark);
- draft: TaskService.draft alone (the checks and the new task, nothing written);
- answer: the created task as the API answers it (TaskCreated's JSON: oss.api.created_view).

`python -m bench.rest_instructions [small large [part ...]]` (default 40 200, every part); needs
valgrind. BATON_BENCH_CALLGRIND_KEEP=<folder> keeps each run's profile there (callgrind_annotate
--inclusive=yes reads it). BATON_BENCH_REST_THREADS=1 prints each part by thread instead (the
event loop is MainThread; the thread pool's and the outbox timer's follow). Not part of
`make bench`: it runs some fifty times slower under it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.callgrind_run import counted_run

PARTS = ("app", "submit", "draft", "answer")
TOKEN = "bench-token-0123456789abcdef"
BODY = json.dumps({"task_type": "bench", "parameters": {}}).encode()
WARM_UP = 20


def _app(control: Path) -> tuple[Any, Any]:
    from bench.engine import FLOWS
    from common.broker.inprocess import InProcessBroker
    from common.flows import parse_flows
    from common.store.sqlite.tasks import SqliteStore
    from oss.api import create_app
    from oss.settings import load_oss_settings

    settings = load_oss_settings(api_tokens=f"bench:{TOKEN}:submit", oss_sweeper=False,
                                 store_url=f"sqlite:///{control / 'tasks.db'}")  # fmt: skip
    store, broker = SqliteStore(control / "tasks.db"), InProcessBroker()
    app = create_app(settings, store, broker, flows=parse_flows(FLOWS, "flows.yaml"))
    app.state.baton.service.declare_queues()  # what the app's lifespan does first
    return app, app.state.baton


def _posts(app: Any) -> Callable[[int], None]:
    """`n` POSTs /api/v1/tasks, one after the other, through the ASGI app in one event loop (as a
    server runs it: anyio's worker threads live as long as it); AssertionError unless each
    answers 201."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
        "path": "/api/v1/tasks", "raw_path": b"/api/v1/tasks", "root_path": "", "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(BODY)).encode()), (b"authorization", f"Bearer {TOKEN}".encode())],
        "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000),
    }  # fmt: skip

    async def one() -> None:
        sent = False
        status: list[int] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.sleep(3600)  # a disconnect is never asked for on a whole answer
            sent = True
            return {"type": "http.request", "body": BODY, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])

        await app({**scope, "headers": list(scope["headers"]), "state": {}}, receive, send)
        assert status == [201], status

    async def many(n: int) -> None:
        for _ in range(n):
            await one()

    loop = asyncio.new_event_loop()
    return lambda n: loop.run_until_complete(many(n))


def _repeated(one: Callable[[], object]) -> Callable[[int], None]:
    def many(n: int) -> None:
        for _ in range(n):
            one()

    return many


def _part(name: str, app: Any, context: Any) -> Callable[[int], None]:
    from common.engine.changes import Timing, create_task
    from oss.api.schemas import TaskCreated
    from oss.api.views import task_view

    service = context.service
    if name == "app":
        return _posts(app)
    if name == "submit":
        return _repeated(lambda: service.submit("bench", {}, submitted_by="bench"))
    if name == "draft":
        return _repeated(lambda: service.draft("bench", {}, submitted_by="bench"))
    if name == "answer":
        task = create_task(task_type="bench", steps=context.flows.get("bench").steps, parameters={},
                           timing=Timing(time.time()))  # fmt: skip

        def answer() -> None:
            shown = task_view(task, context.clock())
            TaskCreated(task_id=task.TaskId, created=True, location="/api/v1/tasks/x", task=shown).model_dump_json()

        try:  # the route's own answer; a checkout from before it built the answer as above
            from oss.api.created_view import created_answer
        except ImportError:
            return _repeated(answer)
        return _repeated(lambda: created_answer(task, context.clock(), True, "/api/v1/tasks/x"))
    raise SystemExit(f"no part {name!r}: one of {', '.join(PARTS)}")


def run(part: str, submissions: int, control: Path) -> None:
    """The measured process (run under valgrind by `counted`)."""
    from common.logging import configure_logging

    configure_logging("json", "warning")  # as bench.api runs the OSS
    app, context = _app(control)
    many = _part(part, app, context)
    watch = sqlite3.connect(control / "tasks.db")  # counts rows: reading documents would be counted as the work
    many(WARM_UP)
    _marked(watch)
    # Its threads' names, for a count by thread (bench.callgrind_run.counted_by_thread).
    (control / "threads.json").write_text(json.dumps({str(t.native_id): t.name for t in threading.enumerate()}))
    (control / "ready.part").write_text(str(os.getpid()))
    (control / "ready.part").rename(control / "ready")
    while not (control / "go").exists():
        time.sleep(0.1)
    many(submissions)
    _marked(watch)
    os._exit(0)  # the interpreter's teardown (a tenth of a short run, and noisy) is not counted


def _marked(watch: sqlite3.Connection) -> None:
    """Until no entry waits for its deferred mark-sent. Looks once a second: counted too, and as
    often as the wall clock says, so a small share whatever the load."""
    while watch.execute("SELECT count(*) FROM tasks WHERE outbox_due IS NOT NULL").fetchone()[0]:
        time.sleep(1.0)


def counted(part: str, submissions: int, checkout: Path) -> int:
    """Instructions callgrind counted for `submissions` of `part` with the code at `checkout`."""
    with tempfile.TemporaryDirectory() as tmp:
        control = Path(tmp)
        env = {**os.environ, "PYTHONPATH": f"{checkout}:{checkout / 'client'}"}
        script = control / "measured.py"  # a copy: this file need not be in `checkout`
        shutil.copy(Path(__file__), script)
        program = [sys.executable, str(script), "--run", part, str(submissions), str(control)]
        keep = os.environ.get("BATON_BENCH_CALLGRIND_KEEP")  # a folder: the profile, for callgrind_annotate
        return counted_run(program, control, cwd=checkout, env=env, timeout=3600,
                           keep=Path(keep) / f"callgrind.{part}.{submissions}" if keep else None)  # fmt: skip


def per_submission(part: str, small: int, large: int, checkout: Path) -> float:
    return (counted(part, large, checkout) - counted(part, small, checkout)) / (large - small)


def counted_threads(part: str, submissions: int, checkout: Path) -> dict[str, int]:
    """`counted`, by thread name."""
    from bench.callgrind_run import counted_by_thread  # the measuring side's: `checkout` may predate it

    with tempfile.TemporaryDirectory() as tmp:
        control = Path(tmp)
        env = {**os.environ, "PYTHONPATH": f"{checkout}:{checkout / 'client'}"}
        script = control / "measured.py"
        shutil.copy(Path(__file__), script)
        program = [sys.executable, str(script), "--run", part, str(submissions), str(control)]
        return counted_by_thread(program, control, cwd=checkout, env=env, timeout=3600)


def per_thread(part: str, small: int, large: int, checkout: Path) -> dict[str, float]:
    """Instructions per submission by thread (its name, numbers left off)."""
    few, many = counted_threads(part, small, checkout), counted_threads(part, large, checkout)
    return {name: (many.get(name, 0) - few.get(name, 0)) / (large - small) for name in sorted(set(few) | set(many))}


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        run(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
        return
    if shutil.which("valgrind") is None or shutil.which("vgdb") is None:
        print("bench.rest_instructions needs valgrind (vgdb): not installed here")
        return
    small, large = (int(n) for n in sys.argv[1:3]) if len(sys.argv) >= 3 else (40, 200)
    parts = sys.argv[3:] or PARTS
    checkout = Path(os.environ.get("BATON_BENCH_CHECKOUT", Path(__file__).resolve().parents[1]))
    print(f"instructions per REST submission ({small} and {large} submissions, {checkout}):")
    for part in parts:
        if os.environ.get("BATON_BENCH_REST_THREADS"):  # each thread's share
            for name, count in per_thread(part, small, large, checkout).items():
                print(f"  {part:<8} {name:<28} {count / 1e6:7.3f} M", flush=True)
            continue
        print(f"  {part:<8} {per_submission(part, small, large, checkout) / 1e6:7.3f} M", flush=True)


if __name__ == "__main__":
    main()
