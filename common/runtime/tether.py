"""A command process dies with its module, however the module ends (kill -9 included).

A command process is a child of the module's forkserver, not of the module (runner.py). Three
things tie it to the module:

- Linux kills it (PR_SET_PDEATHSIG) when its parent, the forkserver, dies.
- The forkserver exits once no process holds the write end of its "alive" pipe. multiprocessing
  hands that end to every child it forks, so a child kept its own forkserver, and so itself, alive
  after the module died: the command ran on for seconds and made its side effects after its step
  had been handed to another replica. A command process never starts processes through the
  forkserver, so it closes its copy: the module is then the forkserver's only tie.
- A watchdog thread waits for the module's end of the command pipe to close (the module died, or
  let the child go) and kills the child's process group: the command and every program it
  started, which the parent-death signal does not reach.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import threading
from multiprocessing import forkserver

PR_SET_PDEATHSIG = 1
_HUNG_UP = select.POLLRDHUP | select.POLLHUP | select.POLLERR | select.POLLNVAL


def tie_to_module(pipe_fd: int) -> None:
    """Call first thing in the command process, after it became its own process group leader."""
    _die_with_parent()
    _release_forkserver()
    threading.Thread(target=_watch, args=(pipe_fd,), name="baton-command-tether", daemon=True).start()


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent (the forkserver) dies."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(0)


def _release_forkserver() -> None:
    alive = getattr(forkserver._forkserver, "_forkserver_alive_fd", None)
    if alive is not None:
        with contextlib.suppress(OSError):
            os.close(alive)
        forkserver._forkserver._forkserver_alive_fd = None


def _watch(pipe_fd: int) -> None:
    """Wake only when the other end hangs up: the requests on the pipe are the main thread's."""
    poller = select.poll()
    poller.register(pipe_fd, _HUNG_UP)
    while True:
        try:
            events = poller.poll()
        except InterruptedError:
            continue
        if any(mask & _HUNG_UP for _, mask in events):
            os.killpg(os.getpgid(0), signal.SIGKILL)  # this process and all it started
