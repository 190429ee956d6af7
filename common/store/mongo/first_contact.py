"""Whether a store client asks, at first contact, if its server answers at all (see
common.store.mongo.client). Kept apart from the client so that a command on SQLite can turn
it on without importing pymongo."""

from __future__ import annotations

fail_fast = False
answered: set[str] = set()  # store URLs whose server answered in this process


def fail_fast_when_unreachable() -> None:
    """For a command that runs once and answers a person (the CLI): the first client of each URL
    asks whether any member of the deployment answers at all, within 3 s, so a store
    that nothing serves fails the command in seconds instead of after the whole store timeout.
    Any member will do (a secondary answers through an election): an operation that needs the
    primary still waits for one as long as the timeout allows. Long-running processes keep
    waiting out the timeout: a store that comes back within it costs them nothing."""
    global fail_fast
    fail_fast = True
