"""Threads that log at the same time (structlog's loggers and the standard library's, as the
reconciler and uvicorn do) never share a line: a real process, every stderr line one JSON object."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

WRITER = textwrap.dedent(
    """
    import logging, threading
    import structlog
    from common.logging import configure_logging

    configure_logging("json", "info")
    start = threading.Barrier(6)

    def structured(n):
        start.wait()
        for i in range(1500):
            structlog.get_logger("t").info("reconciler started", thread=n, i=i)

    def standard(n):
        start.wait()
        for i in range(1500):
            logging.getLogger("uvicorn.error").info("Application startup complete %d %d", n, i)

    threads = [threading.Thread(target=f, args=(n,)) for n in range(3) for f in (structured, standard)]
    for t in threads: t.start()
    for t in threads: t.join()
    """
)


def test_lines_of_threads_logging_at_once_are_never_interleaved() -> None:
    done = subprocess.run([sys.executable, "-c", WRITER], capture_output=True, text=True, timeout=300, check=True)
    lines = done.stderr.splitlines()
    broken = []
    for line in lines:
        try:
            json.loads(line)
        except ValueError:
            broken.append(line)
    assert broken == [], f"{len(broken)} lines are not one JSON object each, e.g. {broken[:3]}"
    assert len(lines) == 6 * 1500
