"""OSS submissions per second through the REST API: one `baton oss` process, keep-alive clients
(bench.http_load) in this process, and the OSS's CPU per submission."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from bench.http_load import post_load
from bench.procstat import usage
from tests.support.cluster import REPO, wait_until
from tests.support.ports import free_port

TOKEN = "bench-token-0123456789abcdef"


def submissions(
    workdir: Path, amqp_url: str, flows_path: Path, seconds: float = 5.0, clients: int = 16, store_url: str | None = None
) -> dict:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "BATON_BROKER_URL": amqp_url,
        "BATON_STORE_URL": store_url or f"sqlite:///{workdir / 'api.db'}",
        "BATON_FLOWS_PATH": str(flows_path),
        "BATON_API_TOKENS": f"bench:{TOKEN}:submit",
        "BATON_OSS_PORT": str(port),
        "BATON_OSS_SWEEPER": "false",
        "BATON_LOG_LEVEL": "warning",  # uvicorn's access log off the measurement
    }
    log = (workdir / "oss.log").open("w")
    server = subprocess.Popen([sys.executable, "-m", "oss", "oss"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
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
