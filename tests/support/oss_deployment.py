"""A deployment of real processes for the end-to-end tests that drive baton as a user does: the
modules (stand-in registries) and a sweeper each in its own process, OSS serving REST without a
sweeper of its own, and the `baton` CLI run as its own process on the same store and broker."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from tests.deploy.support import TOKEN, TOKENS, http
from tests.support.cluster import REPO, STATE_DEADLINE, Cluster, wait_until
from tests.support.ports import free_port


@contextlib.contextmanager
def oss_deployment(workdir: Path, rabbitmq_url: str, flows: str, modules: Mapping[str, str], *,
                   mongo_url: str | None = None, extra_env: Mapping[str, str] = {}) -> Iterator[tuple[Cluster, str]]:  # fmt: skip
    """The cluster and OSS's base URL. `modules`: module name -> the registry it serves
    ("package.module:attribute"). Every process starts side by side (each takes seconds of
    imports and connecting); all are stopped at the end."""
    cluster = Cluster(workdir, rabbitmq_url, flows, mongo_url=mongo_url,
                      extra_env={"BATON_API_TOKENS": TOKENS, "BATON_OSS_SWEEPER": "false", **extra_env})  # fmt: skip
    port = free_port()
    try:
        with cluster.starting():
            for module, registry in modules.items():
                cluster.start_module(module, registry=registry)
            cluster.start_sweeper()
            cluster.start_oss(port)
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: answers(f"{base}/readyz"), 60, "OSS ready")  # its store and broker answer too
        yield cluster, base
    finally:
        cluster.stop_all()


def answers(url: str) -> bool:
    try:
        return http("GET", url, token=None, timeout=2)[0] == 200
    except OSError:
        return False


def baton(cluster: Cluster, *args: str, flows: str | None = None) -> subprocess.CompletedProcess:
    """The `baton` CLI as its own process, on the cluster's store and broker (and flows file)."""
    env = dict(cluster.env)
    if flows is not None:
        path = cluster.workdir / "flows-cli.yaml"
        path.write_text(flows)
        env["BATON_FLOWS_PATH"] = str(path)
    return subprocess.run([sys.executable, "-m", "oss", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=STATE_DEADLINE)  # fmt: skip


def stream_events(base: str, task_id: str, *, seconds: float = 1,
                  until: Callable[[str, dict], bool] | None = None) -> list[tuple[str, dict]]:
    """The task's event stream for `seconds` (it ends with `timeout` while the task waits), or
    up to the first event `until` accepts."""
    request = urllib.request.Request(f"{base}/api/v1/tasks/{task_id}/events?timeout={seconds:g}",
                                     headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
    events, kind = [], ""
    with urllib.request.urlopen(request, timeout=seconds + 30) as answer:
        for raw in answer:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[len("event: "):]
            elif line.startswith("data: "):
                events.append((kind, json.loads(line[len("data: "):])))
                if until is not None and until(*events[-1]):
                    break
    return events
