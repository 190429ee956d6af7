"""Fixtures of every unit test module (tests/support/threads.py says why)."""

from tests.support.threads import no_baton_thread_outlives_the_module  # noqa: F401
