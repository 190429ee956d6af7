"""The session tether's last resort (tests/support/tether.py): a process of its own beside each
pytest process (the controller and every xdist worker) that waits for that process to end, and,
should it end without sweeping (SIGKILL: a CI time-out's SIGTERM, then its SIGKILL once the
grace ran out, mid-teardown), ends what it started: every process carrying its mark and, for the
controller, every vhost named for the run.

It runs in a session of its own, so the signals sent to the run's process group miss it; it
carries the mark, so the pytest process's own sweep at a normal end takes it too. It imports
little but the standard library until the pytest process is gone.

    python -m tests.support.reaper PID MARK [RUN]
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time

from tests.support.process_tree import alive  # the standard library's only

POLL_SECONDS = 0.5  # where a process cannot be waited for by a pidfd


def start(pid: int, mark: str, run: str | None, root: str) -> subprocess.Popen[bytes]:
    """The reaper of process `pid` (whose processes carry `mark`); `run`: the run's id, for the
    controller (its vhosts go too). `root`: the checkout, where `tests` is importable."""
    argv = [sys.executable, "-m", "tests.support.reaper", str(pid), mark, *([run] if run else [])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))}
    return subprocess.Popen(argv, cwd=root, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def wait_for_end(pid: int) -> None:
    """Until process `pid` (not a child of this one) has ended."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd here, or gone already
        while alive(pid):
            time.sleep(POLL_SECONDS)
        return
    try:
        select.select([fd], [], [])  # readable once the process ends
    finally:
        os.close(fd)


def main(argv: list[str]) -> None:
    pid, mark, run = int(argv[0]), argv[1], argv[2] if len(argv) > 2 else None
    wait_for_end(pid)
    from tests.support.tether import sweep

    sweep(mark, with_workers=True)
    if run:
        from tests.support.vhosts import delete_run_vhosts

        with contextlib.suppress(Exception):
            delete_run_vhosts(run)
        sweep(mark, with_workers=True)  # what a hung rabbitmqctl left (its Erlang VM)


if __name__ == "__main__":
    main(sys.argv[1:])
