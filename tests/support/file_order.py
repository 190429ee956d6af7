"""Which test file a pytest-xdist worker gets next under `--dist loadfile` (`make test`).

With `--dist loadfile` the run ends when its busiest worker does, and a worker, once given a
file, runs it whole. pytest-xdist hands the files out by their number of tests, most first: the
fault-injection scenarios and the kill loops, a test or two of a minute or more each, came last,
and one started in the run's last minute made every other worker wait for it. The files known to
take longest go first here (the longest first, one each to the idle workers), the many short
files fill in behind them, so the workers end together.

A worker only runs a file's last test once it knows what comes after it (pytest tears down a
module's fixtures by looking at the next test), so it is given its next file as that test is
about to start: a worker in a one-test file of a minute has its next file waiting all that while.
The next file is therefore given when only that last test is left, not the last two.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

# Files whose tests share one costly session fixture run on one worker, one after another: the
# browser tests share a served console and a headless Chromium (one per worker otherwise).
SHARED_WORKER_GROUPS = ("tests/console/test_browser",)

# The files (or groups) that take longest, longest first; every other file comes after them in
# pytest-xdist's own order. A file that grows slow belongs here: a long file handed out last
# lengthens the whole run by its own length. Measured with `--durations`, not asserted anywhere.
LONGEST_FIRST = (
    "tests/console/test_browser",  # the browser group: minutes on its one worker
    "tests/e2e/test_callbacks_kill_loop.py",
    "tests/chaos/test_quorum_cluster.py",
    "tests/chaos/test_rolling_upgrade.py",
    "tests/chaos/test_module_faults.py",
    "tests/api/test_schemathesis.py",  # a minute and a half, in a directory of short files
)


# After those, the directories whose files run real processes (tens of seconds a file, however
# few tests it holds) before the rest, which pytest-xdist would put last for having few tests.
SLOW_DIRECTORIES = ("tests/chaos/", "tests/e2e/", "tests/deploy/", "tests/integration/")


def rank(scope: str) -> int:
    """Where a file (or group) comes: its place in LONGEST_FIRST, then its directory's place in
    SLOW_DIRECTORIES, then every other file."""
    order = (*LONGEST_FIRST, *SLOW_DIRECTORIES)
    return next((n for n, prefix in enumerate(order) if scope.startswith(prefix)), len(order))


class LongestFirst(LoadFileScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return next((g for g in SHARED_WORKER_GROUPS if nodeid.startswith(g)), super()._split_scope(nodeid))

    def _assign_work_unit(self, node) -> None:  # noqa: ANN001 - pytest-xdist's WorkerController
        # min() keeps pytest-xdist's order among files of the same rank (it returns the first).
        scope = min(self.workqueue, key=rank)
        self.workqueue.move_to_end(scope, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node) -> None:  # noqa: ANN001
        # pytest-xdist's own, with one test left instead of two (see the module's docstring).
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > 1:
            return
        self._assign_work_unit(node)
