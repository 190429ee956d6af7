"""README.md "A worked example", run line by line as a reader would: its exports, `baton oss` and
the resource, mysql and monitor modules as background processes, then each `baton` and `curl`
line against them, on RabbitMQ, a SQLite store and the shared MariaDB.

Only what would collide with other runs on this machine is changed: the broker's vhost, the
store file, the OSS port, the mysql module's meta schema, and the instance names (`app_1` becomes
the sandbox's prefix + `app_1`). The id the README shows for the first task stands for the one the
`curl` call created; `$TASK_ID` is assigned by the example's own line. Each output the README shows is compared with
what the command printed, line by line (shown_matches). `make venv` is not run: this test runs in
the environment it made.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import STATE_DEADLINE, wait_until
from tests.support.doc_examples import README, REPO, blocks, curl_request, shell_lines, substituted
from tests.support.mariadb import Sandbox, mariadb_sandbox

SHOWN_TASK_ID = "1390638280944a97b14f1a0966d89479"  # the id in the README's own output
# What the README says each line ends with, where it is not 0: the job that cannot fit rolls back.
EXPECTED_EXIT = {"create_mysql_instance name=app_2 cpu=16 --wait": 1}
# A line of the output the README shows under a command, as the command prints it.
SHOWN_OUTPUT = {f"watch {SHOWN_TASK_ID}": "status 0 (SUCCESS)",
                "create_mysql_instance name=app_2 cpu=16 --wait": "task_rolled_back: rolled back: step 1 (check_resource)"}
# The outputs the README shows (its `text` blocks, in order) and the line each is the output of.
SHOWN_BLOCKS = ("curl", f"watch {SHOWN_TASK_ID}", "create_mysql_instance name=app_2 cpu=16 --wait")
# What differs from run to run in a line shown: a time, an id, a duration, the flow's hash, the
# instance names (the sandbox's prefix); "..." stands for what the README shortened.
_VARYING = {r"\d\d:\d\d:\d\d\.\d{3}": r"\d\d:\d\d:\d\d\.\d{3}", r"[0-9a-f]{32}": "[0-9a-f]{32}",
            r"\d+\.\d{3}s": r"\d+\.\d{3}s", r"sha256:[0-9a-f]+": "sha256:[0-9a-f]+", r"app_\d": r"\w*app_\d",
            r"\.\.\.": ".*?"}
_SPLIT = re.compile("(" + "|".join(_VARYING) + ")")
# A line `watch` prints when it sees a step between two transitions: how many depends on speed.
_IN_FLIGHT = "  in flight: "


def _stands_for(part: str) -> str:
    return next(stands_for for varying, stands_for in _VARYING.items() if re.fullmatch(varying, part))


def shown_matches(shown: str, printed: str) -> list[str]:
    """The lines of `shown` (an output the README shows) that `printed` does not match, in
    order, and a note when `printed` has lines the README leaves out; [] when they agree."""
    def pattern(line: str) -> re.Pattern[str]:
        parts = _SPLIT.split(line)  # the text between varying parts (even places), the parts (odd)
        return re.compile("".join(re.escape(part) if i % 2 == 0 else _stands_for(part) for i, part in enumerate(parts)))

    wanted = [line for line in shown.splitlines() if not line.startswith(_IN_FLIGHT)]
    got = [line for line in printed.splitlines() if line and not line.startswith(_IN_FLIGHT)]
    wrong = [f"shown {want!r}, printed {line!r}" for want, line in zip(wanted, got) if not pattern(want).fullmatch(line)]
    if len(wanted) != len(got):
        wrong.append(f"shown {len(wanted)} lines, printed {len(got)}: {got[len(wanted):] or wanted[len(got):]}")
    return wrong


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Reader:
    """Runs the example's lines in order, keeping what a reader's shell would keep."""

    def __init__(self, workdir: Path, rabbitmq_url: str, sandbox: Sandbox) -> None:
        self.workdir, self.sandbox, self.port = workdir, sandbox, free_port()
        self.overrides = {"BATON_BROKER_URL": rabbitmq_url, "BATON_STORE_URL": f"sqlite:///{workdir / 'baton.db'}",
                          "BATON_MYSQL_ADMIN_URL": sandbox.admin_url}
        self.env = {**os.environ, "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "BATON_OSS_PORT": str(self.port),
                    "BATON_MYSQL_META_SCHEMA": sandbox.meta_schema, "PYTHONPATH": str(REPO)}
        self.background: list[tuple[subprocess.Popen, Path]] = []
        self.starting: list[tuple[subprocess.Popen, Path, bool]] = []  # started, not yet seen ready: (.., is OSS)
        self.created: str | None = None  # the task the first curl call made
        self.printed: dict[str, str] = {}  # each line run (as the README writes it): what it printed

    def word(self, word: str) -> str:
        word = re.sub(r"\bapp_(\d)\b", lambda m: self.sandbox.name(f"app_{m.group(1)}"), word)
        word = word.replace("127.0.0.1:8080", f"127.0.0.1:{self.port}").replace("$TASK_ID", self.env.get("TASK_ID", ""))
        if self.created:
            word = word.replace(SHOWN_TASK_ID, self.created)
        return str(REPO / word) if word.startswith(".venv/") else word

    def run(self, words: list[str], background: bool) -> None:
        shown = " ".join(words)
        words = [self.word(w) for w in words]
        if words[0] == "make":
            assert (REPO / ".venv" / "bin" / "baton").exists()
        elif words[0] == "export":
            name, _, value = words[1].partition("=")
            self.env[name] = self.overrides.get(name, value)
        elif (assigned := substituted(words)) is not None:  # NAME=$(command ...): the shell keeps what it printed
            name, command = assigned[0], [self.word(w) for w in assigned[1]]
            self.await_started()
            done = subprocess.run(command, cwd=self.workdir, env=self.env, capture_output=True, text=True, timeout=STATE_DEADLINE)
            assert done.returncode == 0 and done.stdout.strip(), (shown, done.stdout, done.stderr[-2000:])
            self.env[name] = done.stdout.strip()
        elif words[0] == "mkdir":
            (self.workdir / words[-1]).mkdir(parents=True, exist_ok=True)
        elif words[0] == "curl":
            self.await_started()
            self.printed.setdefault("curl", self.curl(words))
        elif background:
            self.start(words)
        else:
            self.await_started()
            done = subprocess.run(words, cwd=self.workdir, env=self.env, capture_output=True, text=True, timeout=STATE_DEADLINE)
            expected = next((code for tail, code in EXPECTED_EXIT.items() if shown.endswith(tail)), 0)
            assert done.returncode == expected, (shown, done.returncode, done.stdout[-2000:], done.stderr[-2000:])
            for tail, text in SHOWN_OUTPUT.items():
                assert not shown.endswith(tail) or text in done.stdout, (shown, text, done.stdout[-2000:])
            self.printed[next((tail for tail in SHOWN_BLOCKS if shown.endswith(tail)), shown)] = done.stdout

    def start(self, words: list[str]) -> None:
        log = self.workdir / f"{len(self.background)}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(words, cwd=self.workdir, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        self.background.append((proc, log))
        self.starting.append((proc, log, words[-1] == "oss"))

    def await_started(self) -> None:
        """Before a line in the foreground: the processes the lines before it started in the
        background are ready. They start side by side, as the `&` of a reader's shell starts them."""
        for proc, log, is_oss in self.starting:
            if is_oss:
                wait_until(lambda p=proc: self.answers() or p.poll() is not None, 120, "OSS answers")
            else:
                wait_until(lambda p=proc, out=log: "module started" in out.read_text() or p.poll() is not None, 120,
                           "module started")  # fmt: skip
            assert proc.poll() is None, log.read_text()[-3000:]
        self.starting = []

    def answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def curl(self, words: list[str]) -> str:
        """What `curl -s` prints: the answer's body."""
        method, url, headers, body = curl_request(words)
        request = urllib.request.Request(url, data=body.encode(), headers=headers, method=method)
        with urllib.request.urlopen(request, timeout=STATE_DEADLINE) as answer:
            printed = answer.read().decode()
            assert answer.status in (200, 201), (url, answer.status, printed)
        self.created = self.created or json.loads(printed)["task_id"]
        return printed

    def stop(self) -> None:
        for proc, _ in self.background:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc, _ in self.background:
            try:
                proc.wait(timeout=STATE_DEADLINE)  # a graceful stop at load
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def reader(rabbitmq_url: str, tmp_path: Path) -> Iterator[Reader]:
    with mariadb_sandbox() as sandbox:
        reader = Reader(tmp_path, rabbitmq_url, sandbox)
        try:
            yield reader
        finally:
            reader.stop()


def test_the_worked_example_runs_as_written(reader: Reader) -> None:
    lines = [line for code in blocks(README, "A worked example", "sh") for line in shell_lines(code)]
    assert len(lines) > 15
    made_app_1 = False
    for words, background in lines:
        reader.run(words, background)
        if words[1:3] == ["watch", SHOWN_TASK_ID]:  # the first task succeeded: its database is there
            made_app_1 = reader.sandbox.name("app_1") in reader.sandbox.databases()
    assert made_app_1, "create_mysql_instance made no database app_1"
    outputs = blocks(README, "A worked example", "text")
    assert len(outputs) == len(SHOWN_BLOCKS)
    for shown, line in zip(outputs, SHOWN_BLOCKS):
        assert shown_matches(shown, reader.printed[line]) == [], (line, reader.printed[line][-3000:])
    # The two deletes at its end leave nothing of the example on the server.
    assert reader.sandbox.databases() == set() and reader.sandbox.users() == set()
