"""OSS submissions per second through the REST API: one `baton oss` process, HTTP clients in threads."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from tests.support.cluster import REPO, wait_until

TOKEN = "bench-token-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        wait_until(lambda: _ready(base), 30, "OSS ready")
        counts = [0] * clients
        stop = threading.Event()

        def client(index: int) -> None:
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
                while not stop.is_set():
                    response = http.post("/api/v1/tasks", json={"task_type": "bench", "parameters": {}})
                    if response.status_code == 201:
                        counts[index] += 1

        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        time.sleep(seconds)
        stop.set()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        return {"submissions_per_second": sum(counts) / elapsed, "clients": clients, "seconds": elapsed}
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
