"""A real MongoDB wire-protocol server for the tests: SecantusDB (PyPI `SecantusDB`), run as its
own process on a free port with its own storage directory.

It speaks MongoDB's wire protocol over WiredTiger with a journal, and advertises itself as a
one-node replica set ("secantus"), so w=majority and journal=true are honoured, as are partial
and unique indexes and transactions. It is a separate process, so the crash tests can do to it
what happens to a database server: kill -9, freeze (SIGSTOP), thaw, restart on the same files.

What it does, measured with 0.7.0b3 (what the tests can and cannot prove on it):
- durability: with `j: true` each write fsyncs its journal; without it, kill -9 right after a few
  hundred acknowledged inserts lost 5% to 14% of them. `w: majority` is met by the one node;
  `w: 3` answers UnsatisfiableWriteConcern (100).
- unique, partial and multikey indexes, transactions, `timeoutMS` on a frozen (SIGSTOP) server:
  as MongoDB. Its planner picks an index for the filter but always sorts in memory, so `explain`
  cannot show that a listing walks an index in order: the index tests check the definitions.
- it refuses documents over 16 MB (the driver does, first) but accepts nesting deeper than
  MongoDB's 100 levels and `$`-prefixed keys.

Like every service: skipped on a laptop without the package, a failure under CI=true; installed
but unable to start, a failure.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any


from tests.support.naming import unique_name
from tests.support.ports import free_port
from tests.support.services import require, require_usable

START_TIMEOUT = 60.0


def available() -> bool:
    return importlib.util.find_spec("secantus") is not None


class SecantusServer:
    """One server process; `url` stays the same across restarts (same port, same files)."""

    def __init__(self, storage_path: str, log_path: str):
        self.port = free_port()
        self.storage_path = storage_path
        self._log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}/"

    def database_url(self, database: str, options: str = "") -> str:
        return f"mongodb://127.0.0.1:{self.port}/{database}" + (f"?{options}" if options else "")

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SECANTUS_")}  # durable mode
        with open(self._log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "secantus", "--host", "127.0.0.1", "--port", str(self.port),
                 "--storage-path", self.storage_path, "--log-level", "WARNING"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )  # fmt: skip
        self._wait_ready()

    def _wait_ready(self) -> None:
        from pymongo import MongoClient

        deadline = time.monotonic() + START_TIMEOUT
        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"SecantusDB exited with {self.process.returncode}; see {self._log_path}")
            client: Any = MongoClient(self.url, serverSelectionTimeoutMS=500, connectTimeoutMS=500)
            try:
                client.admin.command("ping")
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
            finally:
                client.close()
            time.sleep(0.1)

    def kill9(self) -> None:
        """SIGKILL, as a crash: whatever is not on disk is gone."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)  # a frozen process dies only once it runs
        self.process.kill()
        self.process.wait(timeout=30)

    def crash_and_restart(self) -> None:
        self.kill9()
        self.start()

    def freeze(self) -> None:
        """SIGSTOP, returning once the process is stopped (a signal is delivered asynchronously:
        a request sent right after kill() could still be answered)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while _process_state(self.process.pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.01)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)


def _process_state(pid: int) -> str:
    """The state letter of /proc/PID/status ("T" when stopped)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("State:"):
                return line.split()[1]
    return "?"


@contextlib.contextmanager
def secantus_server(prefix: str = "baton-secantus") -> Iterator[SecantusServer]:
    """A started server on fresh storage, stopped and removed afterwards."""
    require(available(), "SecantusDB is not installed (pip install -r requirements.lock)")
    with tempfile.TemporaryDirectory(prefix=unique_name(prefix) + "-") as home:
        server = SecantusServer(os.path.join(home, "data"), os.path.join(home, "server.log"))
        try:
            server.start()
        except Exception as e:  # installed, so configured: a failure, never a skip
            server.stop()
            require_usable(True, False, f"SecantusDB did not start: {e}")
        try:
            yield server
        finally:
            server.stop()


def fresh_database_name(prefix: str = "baton_test") -> str:
    return unique_name(prefix, sep="_")
