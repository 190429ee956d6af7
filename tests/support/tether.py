"""The test session's tether: nothing a run started outlives it, however the run ends.

Tests start real processes: module processes (and their forkservers, resource trackers and
command processes), sweepers, SecantusDB servers and private RabbitMQ nodes (the last two in
sessions of their own, so that a test can kill one whole), and they make vhosts on the shared
RabbitMQ. Their fixtures stop them; but a fixture's teardown never runs when pytest is killed
(a CI time-out's SIGTERM), and a process that escaped its parent (a forkserver whose module was
killed) is no fixture's to stop.

So every process a run starts is marked: pytest sets BATON_TEST_TETHER in its environment (the
controller makes a new mark; each xdist worker adds its own id to it), and every process
inherits it. The tether then:
- turns SIGTERM into an interruption (KeyboardInterrupt), so pytest tears down the fixtures it
  set up, which stop what they started and delete their vhosts; the controller first passes the
  SIGTERM on to its workers. A second SIGTERM skips the teardown;
- at the end of the session, and on a second SIGTERM, kills every process that still carries the
  process's mark (reading /proc/PID/environ), and deletes the vhosts this process made;
- killed outright (SIGKILL, mid-teardown: a CI time-out's grace ran out), leaves that to its
  reaper (tests/support/reaper.py), a process of its own that waits for its end.
The Erlang port mapper (epmd) is left alone: the first Erlang node starts one that every node
on the machine shares.

Loaded by tests/conftest.py (`pytest_plugins`); a pytest run outside tests/ loads it with
`-p tests.support.tether`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.support.process_tree import environment

TETHER_ENV = "BATON_TEST_TETHER"
SPARED = ("epmd",)  # shared by every Erlang node on the machine, ours or not
WORKERS_GRACE = 120.0  # for xdist workers to tear down after a SIGTERM: a state, waited for
SAME_REQUEST = 2.0  # seconds: a SIGTERM this soon after the first is the same one delivered again
EXECNET = b"sys.stdin.readline()"  # in the command line of a pytest-xdist worker (execnet's popen)


def mark() -> str:
    return os.environ.get(TETHER_ENV, "")


def _own_mark(config: pytest.Config) -> None:
    """The controller (or a run without workers) makes a new mark; a worker adds its id to its
    controller's, so that it sweeps only what it started."""
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker is not None and mark():
        os.environ[TETHER_ENV] = f"{mark()}-{worker}"
    else:
        os.environ[TETHER_ENV] = uuid.uuid4().hex[:12]


def _parent(pid: int) -> int:
    with contextlib.suppress(OSError, IndexError, ValueError):
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return 0


def _name(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/comm").read_text().strip()
    return ""


def _cmdline(pid: int) -> bytes:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    return b""


def marked(tag: str, *, with_workers: bool = False) -> list[int]:
    """Running processes carrying `tag` (and, `with_workers`, the marks of its workers'
    processes): this process, its ancestors and epmd excepted."""
    keep, pid = set(), os.getpid()
    while pid > 1:
        keep.add(pid)
        pid = _parent(pid)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in keep:
            continue
        value = environment(int(entry.name)).get(TETHER_ENV, "")
        if (value == tag or with_workers and value.startswith(tag + "-")) and _name(int(entry.name)) not in SPARED:
            found.append(int(entry.name))
    return found


def sweep(tag: str | None = None, *, with_workers: bool = False) -> list[int]:
    """Kill every process left with the mark; returns their pids."""
    tag = tag or mark()
    if not tag:
        return []
    killed = marked(tag, with_workers=with_workers)
    for pid in killed:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)  # a frozen (SIGSTOPped) process dies only once it runs
            os.kill(pid, signal.SIGKILL)
    return killed


def _workers() -> list[int]:
    """This process's pytest-xdist workers still running: its children that execnet started."""
    return [pid for pid in marked(mark()) if _parent(pid) == os.getpid() and EXECNET in _cmdline(pid)]


def _delete_vhosts(*, whole_run: bool = False) -> None:
    """The vhosts this process made; `whole_run`: every vhost named for this run, whichever
    worker made it (a worker killed before its own teardown leaves its vhosts to this)."""
    from tests.support.naming import run_id
    from tests.support.vhosts import delete_made_vhosts, delete_run_vhosts

    delete_made_vhosts()
    if whole_run:
        delete_run_vhosts(run_id())


_terms: list[float] = []


def _on_sigterm(signum: int, frame: object) -> None:
    now = time.monotonic()
    if _terms and now - _terms[0] < SAME_REQUEST:
        return  # one request delivered twice (to the process group, and again by `make`)
    _terms.append(now)
    if len(_terms) > 1:  # asked again: no teardown, only what leaves nothing behind
        sweep(with_workers=True)
        _delete_vhosts(whole_run=True)
        sweep(with_workers=True)
        os._exit(128 + signal.SIGTERM)
    for worker in _workers():  # they tear down what they started, as this process does
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGTERM)
    raise KeyboardInterrupt("SIGTERM: tearing down what the run started")


def _workers_busy() -> bool:
    """Workers still running and still tearing down: processes carrying their marks remain."""
    tag = mark()
    return bool(_workers()) and any(environment(pid).get(TETHER_ENV, "") != tag for pid in marked(tag, with_workers=True))


class _WorkersFirst:
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Interrupted: the workers tear down what they started before pytest-xdist ends them
        (it gives them seconds, then kills them: their teardown on a loaded machine takes longer)."""
        if _terms and getattr(session.config, "workerinput", None) is None:
            deadline = time.monotonic() + WORKERS_GRACE
            while _workers_busy() and time.monotonic() < deadline:
                time.sleep(0.2)


def pytest_configure(config: pytest.Config) -> None:
    _own_mark(config)
    signal.signal(signal.SIGTERM, _on_sigterm)
    config.pluginmanager.register(_WorkersFirst(), "baton-tether-workers-first")
    _start_reaper(controller=getattr(config, "workerinput", None) is None)


_reapers: list[subprocess.Popen[bytes]] = []  # kept: the sweep at the session's end takes them


def _start_reaper(*, controller: bool) -> None:
    """For a pytest killed outright (SIGKILL): tests/support/reaper.py."""
    from tests.support.naming import run_id
    from tests.support.reaper import start

    _reapers.append(start(os.getpid(), mark(), run_id() if controller else None, str(Path(__file__).resolve().parents[2])))


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """A test that ran a process's entry point in-process (its stop_on_signals) took SIGTERM over:
    the tether takes it back for the tests after it."""
    if signal.getsignal(signal.SIGTERM) is not _on_sigterm:
        signal.signal(signal.SIGTERM, _on_sigterm)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After the fixtures' teardown (pytest's own sessionfinish) and, in the controller, after
    its workers ended (pytest-xdist's): whatever is left goes."""
    controller = getattr(session.config, "workerinput", None) is None
    _delete_vhosts(whole_run=controller and bool(_terms))
    sweep(with_workers=controller)  # after: a rabbitmqctl call that hung (its Erlang VM) goes too
