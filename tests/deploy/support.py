"""Starting baton's roles the way a container does (deploy/entrypoint.sh), as local processes,
and talking to them over HTTP like a client, a probe or a Prometheus scraper would."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.support.cluster import STATE_DEADLINE, wait_until

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "deploy" / "entrypoint.sh"
BIN = Path(sys.executable).parent  # where `baton` and `python` of this environment are
TOKEN = "deploy-test-token-0123456789abcdef"
TOKENS = f"tester:{TOKEN}:operator"


def clean_env(**settings: str) -> dict[str, str]:
    """This machine's environment without any BATON_* of the developer's shell, with this
    environment's `baton` and `python` first on PATH (as /opt/venv/bin is in the image)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(settings)
    return env


@dataclass
class Role:
    name: str
    popen: subprocess.Popen
    log_path: Path
    started: float = field(default_factory=time.monotonic)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def terminate(self) -> None:
        """One SIGTERM (a second one may land in interpreter shutdown and kill outright)."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)

    def wait(self, timeout: float = STATE_DEADLINE) -> int:  # a graceful stop at load
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(
                f"{self.name} still ran {timeout}s after SIGTERM:\n{self.log()[-3000:]}"
            ) from None


@dataclass
class Roles:
    """Processes started through the container entry point, each logging to a file."""

    workdir: Path
    roles: dict[str, Role] = field(default_factory=dict)

    def start(
        self, name: str, args: list[str], env: dict[str, str], ready: str, timeout: float = 60
    ) -> Role:
        role = self.launch(name, args, env)
        self.await_ready(role, ready, timeout)
        return role

    def launch(self, name: str, args: list[str], env: dict[str, str]) -> Role:
        log_path = self.workdir / f"{name}.log"
        with log_path.open("a") as log:
            popen = subprocess.Popen(
                [str(ENTRYPOINT), *args],
                cwd=self.workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.roles[name] = Role(name, popen, log_path)
        return self.roles[name]

    @staticmethod
    def await_ready(role: Role, ready: str, timeout: float = 60) -> None:
        try:
            wait_until(
                lambda: ready in role.log() or role.popen.poll() is not None,
                timeout,
                f"{role.name}: {ready!r}",
            )
        except AssertionError:
            raise AssertionError(f"{role.name} not ready:\n{role.log()[-3000:]}") from None
        if role.popen.poll() is not None:
            raise AssertionError(
                f"{role.name} exited with {role.popen.returncode}:\n{role.log()[-3000:]}"
            )

    def stop_all(self) -> dict[str, int]:
        for role in self.roles.values():
            role.terminate()
        return {name: role.wait() for name, role in self.roles.items()}

    def logs(self) -> str:
        return "\n".join(f"==== {r.name}\n{r.log()[-3000:]}" for r in self.roles.values())


def http(
    method: str,
    url: str,
    body: Any = None,
    token: str | None = TOKEN,
    timeout: float = STATE_DEADLINE,
) -> tuple[int, Any]:
    # An answer is a state: on a machine at load 20-45 one can come later than 10 s, so the
    # default bounds only a hung request. A caller whose test is about how soon an answer comes
    # (a probe, a request a kill cuts) passes its own `timeout`.
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            raw = answer.read()
            status = answer.status
    except urllib.error.HTTPError as error:
        raw, status = error.read(), error.code
    text = raw.decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def wait_task_final(base_url: str, task_id: str, timeout: float = 60, token: str = TOKEN) -> dict:
    final: dict = {}

    def done() -> bool:
        try:
            status, body = http("GET", f"{base_url}/api/v1/tasks/{task_id}", token=token)
        except (TimeoutError, urllib.error.URLError) as exc:
            if isinstance(exc, TimeoutError) or isinstance(exc.reason, TimeoutError):
                return False  # no answer within http()'s time-out on a loaded machine: ask again
            raise
        if status == 200 and body["TaskStatus"] in (0, 4, 5):
            final.update(body)
            return True
        return False

    wait_until(done, timeout, f"task {task_id} final", interval=0.1)
    return final


def scrape(url: str) -> dict[tuple, float]:
    """{(sample name, sorted label pairs): value} from a live /metrics page."""
    text = urllib.request.urlopen(url, timeout=STATE_DEADLINE).read().decode()  # a page at load
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def grew(before: dict, after: dict, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


URL_LINE = re.compile(r"baton is up at (http://\S+)")
TOKEN_LINE = re.compile(r"^\s+token:\s+(\S+)", re.MULTILINE)


def deploy_module(name: str) -> ModuleType:
    """A Python file of deploy/ (not a package: it ships as scripts), imported by path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"deploy_{name}", REPO / "deploy" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module
