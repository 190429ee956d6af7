"""A private RabbitMQ node for the scenarios that restart or kill the broker.

The machine's shared broker (127.0.0.1:5672) is never touched: a node of our own gets its own
name (`baton-chaos-<random>@localhost`), AMQP and distribution ports, data, log and pid files
under a temporary directory, no plugins, and an Erlang cookie of its own (HOME points at the
temporary directory, so nothing is written to the real home). epmd is the machine's, shared by
every node, which is how Erlang works.

The server scripts are run directly (`/usr/lib/rabbitmq/bin/rabbitmq-server`), not through the
Debian wrapper in /usr/sbin, which would switch to the `rabbitmq` user, `cd /var/lib/rabbitmq`
and send the output to /var/log/rabbitmq.

    with PrivateRabbit() as rabbit:
        rabbit.start()
        ...  rabbit.url ...
        rabbit.restart()   # rabbitmqctl stop, start again on the same port and data directory
        rabbit.kill9()     # SIGKILL to beam.smp (pid file); rabbit.start() brings it back
    # killed and its directory removed, also when the test failed
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self

import pika
import pika.exceptions

from tests.support.ports import free_port

# rabbitmqctl boots an Erlang VM of its own for each call: at load 40 one took over 60 s, so a
# call is given the state deadline the tests wait for any state with.
CTL_TIMEOUT = float(os.environ.get("BATON_TEST_STATE_DEADLINE", "300"))

START_TIMEOUT = 90.0
STOP_TIMEOUT = 60.0


def rabbitmq_bin_dir() -> Path | None:
    """Where the real rabbitmq-server and rabbitmqctl scripts live, or None if not installed."""
    override = os.environ.get("BATON_TEST_RABBITMQ_BIN")
    candidates = [Path(override)] if override else []
    candidates.append(Path("/usr/lib/rabbitmq/bin"))
    found = shutil.which("rabbitmq-server")
    if found:
        candidates.append(Path(os.path.realpath(found)).parent)
    for directory in candidates:
        server, ctl = directory / "rabbitmq-server", directory / "rabbitmqctl"
        # The Debian wrapper resolves to rabbitmq-script-wrapper, not to rabbitmq-server itself.
        if server.is_file() and ctl.is_file() and os.path.realpath(server).endswith("rabbitmq-server"):
            return directory
    return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class PrivateRabbitError(RuntimeError):
    pass


class PrivateRabbit:
    def __init__(self, bin_dir: Path | None = None, *, cookie: str | None = None, prefix: str = "baton-chaos",
                 join: str | None = None):
        """`cookie`: the Erlang cookie, shared by the nodes of one private cluster (else one of
        its own). `join`: the name of a node this one joins as it first boots (see _write_files)."""
        found = bin_dir or rabbitmq_bin_dir()
        if found is None:
            raise PrivateRabbitError("rabbitmq-server is not installed")
        self.bin_dir = found
        self.dir = Path(tempfile.mkdtemp(prefix="baton-chaos-rabbit-"))
        self.node = f"{prefix}-{secrets.token_hex(4)}@localhost"
        self.cookie = cookie or secrets.token_hex(16).upper()
        self.port = free_port()
        self.dist_port = free_port()
        self.pid_file = self.dir / "rabbit.pid"
        self.server_log = self.dir / "server.out"
        self._popen: subprocess.Popen | None = None
        self.starts = 0
        self._write_files(join)

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"

    # --- life cycle --------------------------------------------------------------------------

    def start(self, timeout: float = START_TIMEOUT) -> float:
        """Start the node on its port and data directory; returns the seconds it took."""
        if self._popen is not None and self._popen.poll() is None:
            raise PrivateRabbitError(f"{self.node} is already running")
        began = time.monotonic()
        self.pid_file.unlink(missing_ok=True)  # a stale pid file must not pass for this start
        with self.server_log.open("ab") as out:
            self._popen = subprocess.Popen(
                [str(self.bin_dir / "rabbitmq-server")],
                cwd=self.dir,
                env=self.env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: cleanup kills it and nothing else
            )
        self.starts += 1
        self._await_ready(began + timeout)
        return time.monotonic() - began

    def stop(self, timeout: float = STOP_TIMEOUT) -> float:
        """A clean stop (`rabbitmqctl stop`): the node syncs its queues and exits."""
        began = time.monotonic()
        pid = self.beam_pid()
        result = self.ctl("stop", str(self.pid_file), timeout=timeout, check=False)
        if pid is not None:
            self._wait_gone(pid, timeout)
        self._reap()
        if result.returncode != 0 and pid is not None and pid_alive(pid):
            raise PrivateRabbitError(f"could not stop {self.node}: {result.stdout}{result.stderr}")
        return time.monotonic() - began

    def kill9(self) -> int:
        """SIGKILL the node's beam.smp (no clean shutdown); returns the pid killed."""
        pid = self.beam_pid()
        if pid is None or not pid_alive(pid):
            raise PrivateRabbitError(f"{self.node} is not running")
        os.kill(pid, signal.SIGKILL)
        self._wait_gone(pid, 30)
        self._reap()
        return pid

    def restart(self) -> tuple[float, float]:
        return self.stop(), self.start()

    def close(self) -> None:
        """Kill the node whatever state it is in, then remove its directory. No clean stop: its
        data goes with the directory, and `rabbitmqctl stop` would cost an Erlang VM and the
        node's own shutdown for nothing."""
        try:
            pid = self.beam_pid()
            if pid is not None and pid_alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._wait_gone(pid, 15)
            if self._popen is not None and self._popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._popen.pid, signal.SIGKILL)  # our own session only
            self._reap()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- queries -----------------------------------------------------------------------------

    def beam_pid(self) -> int | None:
        with contextlib.suppress(OSError, ValueError):
            return int(self.pid_file.read_text().strip())
        return None

    def running(self) -> bool:
        pid = self.beam_pid()
        return pid is not None and pid_alive(pid)

    @contextlib.contextmanager
    def vhost(self, name: str | None = None):
        """A vhost of its own on this node (one per scenario), deleted afterwards; yields its URL."""
        name = name or f"chaos-{secrets.token_hex(4)}"
        self.ctl("add_vhost", name)
        try:
            self.ctl("set_permissions", "-p", name, "guest", ".*", ".*", ".*")
            yield f"amqp://guest:guest@127.0.0.1:{self.port}/{name}"
        finally:
            if self.running():
                with contextlib.suppress(Exception):
                    self.ctl("delete_vhost", name)

    def queue_messages(self, vhost: str = "/") -> dict[str, int]:
        """Every queue's messages, ready plus unacknowledged (rabbitmqctl list_queues)."""
        return list_queue_messages(lambda *args: self.ctl(*args).stdout, vhost)

    def ctl(self, *args: str, timeout: float = CTL_TIMEOUT, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bin_dir / "rabbitmqctl"), "-n", self.node, *args],
            env=self.env(), capture_output=True, text=True, timeout=timeout, check=check,
        )

    def tail(self, chars: int = 3000) -> str:
        parts = [self.server_log, *sorted((self.dir / "log").glob("*.log"))]
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-chars:]}" for p in parts if p.exists())

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RABBITMQ_", "ERL_"))}
        env.update(
            HOME=str(self.dir),  # the Erlang cookie of this node and its CLI calls
            RABBITMQ_CONF_ENV_FILE=str(self.dir / "rabbitmq-env.conf"),  # not /etc/rabbitmq's
            RABBITMQ_NODENAME=self.node,
            RABBITMQ_NODE_IP_ADDRESS="127.0.0.1",
            RABBITMQ_NODE_PORT=str(self.port),
            RABBITMQ_DIST_PORT=str(self.dist_port),
            RABBITMQ_CONFIG_FILE=str(self.dir / "rabbitmq.conf"),
            RABBITMQ_ADVANCED_CONFIG_FILE=str(self.dir / "advanced.config"),
            RABBITMQ_ENABLED_PLUGINS_FILE=str(self.dir / "enabled_plugins"),
            RABBITMQ_MNESIA_BASE=str(self.dir / "mnesia"),
            RABBITMQ_LOG_BASE=str(self.dir / "log"),
            RABBITMQ_PID_FILE=str(self.pid_file),
            RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}",
            ERL_EPMD_ADDRESS="127.0.0.1",
        )
        return env

    # --- the parts ---------------------------------------------------------------------------

    def _write_files(self, join: str | None) -> None:
        cookie = self.dir / ".erlang.cookie"
        cookie.write_text(self.cookie)
        cookie.chmod(0o400)
        (self.dir / "rabbitmq-env.conf").write_text("")
        (self.dir / "enabled_plugins").write_text("[].\n")  # no management, no other plugin
        # The machine's /etc/rabbitmq/rabbitmq.conf names port 5672: this file replaces it.
        (self.dir / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\n"
            "log.console = false\n"
            "log.file.level = info\n"
            + (self._join_conf(join) if join else "")
        )

    @staticmethod
    def _join_conf(seed: str) -> str:
        """Peer discovery from the config file: on its first boot (an empty data directory) the
        node joins `seed`'s cluster by itself, which spares the stop_app / join_cluster /
        start_app round of rabbitmqctl (an Erlang VM each). If the seed is not booted yet, the
        node retries every half second for up to a minute, so the nodes can start together.
        Later starts (after a kill) ignore it: the node rejoins the cluster its data names."""
        return (
            "cluster_formation.peer_discovery_backend = classic_config\n"
            f"cluster_formation.classic_config.nodes.1 = {seed}\n"
            "cluster_formation.discovery_retry_limit = 120\n"
            "cluster_formation.discovery_retry_interval = 500\n"
        )

    def _await_ready(self, deadline: float) -> None:
        """Wait until the node wrote its pid file and completes an AMQP handshake (its boot is
        done, and guest can log in), polled from here: `rabbitmqctl wait` boots an Erlang VM of
        its own, which costs a second of CPU per start, and waits on even after the server
        process exited. A server that exits or stalls fails the start with its log's tail."""
        while True:
            if self._popen is not None and self._popen.poll() is not None:
                raise PrivateRabbitError(
                    f"{self.node} exited with {self._popen.returncode} while starting:\n{self.tail()}"
                )
            if self.pid_file.exists() and self._handshake():
                return
            if time.monotonic() > deadline:
                raise PrivateRabbitError(f"{self.node} not ready on port {self.port} in time:\n{self.tail()}")
            time.sleep(0.1)

    def _handshake(self) -> bool:
        try:
            connection = pika.BlockingConnection(
                pika.URLParameters(self.url + "?connection_attempts=1&socket_timeout=2&blocked_connection_timeout=2")
            )
        except (pika.exceptions.AMQPError, OSError):
            return False
        with contextlib.suppress(pika.exceptions.AMQPError):
            connection.close()
        return True

    def _wait_gone(self, pid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            self._reap(block=False)
            time.sleep(0.05)

    def _reap(self, block: bool = True) -> None:
        if self._popen is None:
            return
        if block:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=10)
        else:
            self._popen.poll()


def list_queue_messages(run_ctl, vhost: str) -> dict[str, int]:
    """Parse `rabbitmqctl list_queues -p VHOST name messages` (ready + unacknowledged)."""
    output = run_ctl("list_queues", "-q", "--no-table-headers", "-p", vhost, "name", "messages")
    counts: dict[str, int] = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts
