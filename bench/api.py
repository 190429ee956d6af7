"""OSS submissions per second through the REST API: one `baton oss` process, keep-alive clients
(bench.http_load) in this process, and the OSS's CPU per submission.

BATON_BENCH_REST_BEFORE=<git revision>: the same measure of the OSS of that revision too (its
files exported from git into a temporary folder), in rounds alternating with this checkout's,
so that a change's before and after come from one run on the same machine load."""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path

import httpx

from bench.http_load import post_load
from bench.procstat import usage
from tests.support.cluster import REPO, wait_until
from tests.support.ports import free_port

TOKEN = "bench-token-0123456789abcdef"


def submissions(
    workdir: Path, amqp_url: str, flows_path: Path, seconds: float = 5.0, clients: int = 16, store_url: str | None = None,
    checkout: Path = REPO,
) -> dict:
    """`checkout`: the code the OSS runs (this one's by default)."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "BATON_BROKER_URL": amqp_url,
        "BATON_STORE_URL": store_url or f"sqlite:///{workdir / 'api.db'}",
        "BATON_FLOWS_PATH": str(flows_path),
        "BATON_API_TOKENS": f"bench:{TOKEN}:submit",
        "BATON_OSS_PORT": str(port),
        "BATON_OSS_SWEEPER": "false",
        "BATON_LOG_LEVEL": "warning",  # uvicorn's access log off the measurement
    }
    log = (workdir / "oss.log").open("w")
    server = subprocess.Popen([sys.executable, "-m", "oss", "oss"], cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: oss_ready(base), 30, "OSS ready")
        body = {"task_type": "bench", "parameters": {}}
        headers = {"Authorization": f"Bearer {TOKEN}"}
        post_load(port, "/api/v1/tasks", body, headers, clients=clients, seconds=min(1.0, seconds))  # warm-up
        before = usage(server.pid)
        load = post_load(port, "/api/v1/tasks", body, headers, clients=clients, seconds=seconds)
        after = usage(server.pid)
        created = load["by_status"].get(201, 0)
        spent = after.cpu_seconds - before.cpu_seconds if before and after else float("nan")
        return {
            "submissions_per_second": created / load["seconds"],
            "oss_cpu_ms_per_submission": 1000 * spent / max(1, created),
            "refused": sum(n for status, n in load["by_status"].items() if status != 201),
            "clients": clients,
            "seconds": load["seconds"],
        }
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def oss_ready(base: str) -> bool:
    """A served OSS answers its health check."""
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def before_and_after(workdir: Path, amqp_url: str, flows_path: Path, revision: str, seconds: float,
                     rounds: int = 2) -> tuple[dict, dict]:
    """`submissions` of the OSS at git `revision` and of this checkout, in alternating rounds:
    the median figures of each."""
    before = workdir / "before-checkout"
    archive = subprocess.run(["git", "archive", "--format=tar", revision], cwd=REPO, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(before, filter="data")
    runs: dict[Path, list[dict]] = {before: [], REPO: []}
    for round_ in range(rounds):
        for index, checkout in enumerate((before, REPO) if round_ % 2 == 0 else (REPO, before)):
            runs[checkout].append(submissions(workdir / f"ab-{round_}-{index}", amqp_url, flows_path, seconds,
                                              checkout=checkout))  # fmt: skip
    return _median(runs[before]), _median(runs[REPO])


def _median(runs: list[dict]) -> dict:
    return {**runs[0], **{key: statistics.median(r[key] for r in runs)
                          for key in ("submissions_per_second", "oss_cpu_ms_per_submission", "refused")}}


def rest_note(api: dict) -> str:
    refused = f"; {api['refused']} answers not 201" if api["refused"] else ""
    return f"OSS CPU {api['oss_cpu_ms_per_submission']:.2f} ms per submission{refused}"


def rest_rows(work: Path, url: str, flows_path: Path, seconds: float) -> list[tuple[str, str, str]]:
    """The REST row; with BATON_BENCH_REST_BEFORE, the same for that git revision beside it."""
    revision = os.environ.get("BATON_BENCH_REST_BEFORE")
    if not revision:
        api = submissions(work, url, flows_path, seconds=seconds)
        return [(f"OSS submissions through the REST API ({api['clients']} clients, one process)",
                 f"{api['submissions_per_second']:.0f} /s", rest_note(api))]
    before, after = before_and_after(work / "rest", url, flows_path, revision, seconds)
    return [(f"OSS submissions through the REST API ({after['clients']} clients, one process)",
             f"{after['submissions_per_second']:.0f} /s", rest_note(after)),
            (f"  the same, the OSS of {revision} (rounds alternating with this checkout's)",
             f"{before['submissions_per_second']:.0f} /s", rest_note(before))]


def main() -> None:
    """`python -m bench.api`: the REST rows alone (BATON_BENCH_REST_SECONDS, default 5)."""
    import tempfile

    from bench.engine import FLOWS
    from common.logging import configure_logging
    from tests.support.vhosts import rabbitmq_vhost

    configure_logging(level="warning")
    with rabbitmq_vhost("baton-bench-api") as url, tempfile.TemporaryDirectory() as tmp:
        flows_path = Path(tmp) / "flows.yaml"
        flows_path.write_text(FLOWS)
        rows = rest_rows(Path(tmp), url, flows_path, float(os.environ.get("BATON_BENCH_REST_SECONDS", "5")))
    print(f"\nbaton REST submissions: {os.cpu_count()} cores, RabbitMQ and SQLite on this machine")
    for name, value, note in rows:
        print(f"  {name:<70}  {value:>8}  {note}")


if __name__ == "__main__":
    main()
