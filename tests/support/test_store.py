"""Which store the end-to-end and chaos clusters run on: BATON_TEST_STORE=sqlite (the default) or
mongo (a database of its own on the session's SecantusDB server, tests.support.secantus).

    BATON_TEST_STORE=mongo .venv/bin/python -m pytest tests/e2e/test_engine.py tests/chaos

The scenarios that crash or freeze the database server itself always run on Mongo, on a server
of their own (tests/e2e/test_store_server_faults.py).
"""

from __future__ import annotations

import os

import pytest

from tests.support.secantus import fresh_database_name

STORE_ENV = "BATON_TEST_STORE"


def cluster_store() -> str:
    kind = os.environ.get(STORE_ENV, "sqlite").lower()
    if kind not in ("sqlite", "mongo"):
        raise pytest.UsageError(f"{STORE_ENV} must be sqlite or mongo (got {kind!r})")
    return kind


def cluster_mongo_url(request: pytest.FixtureRequest) -> str | None:
    """The MongoDB URL for a cluster when BATON_TEST_STORE=mongo (a fresh database), else None."""
    if cluster_store() != "mongo":
        return None
    server = request.getfixturevalue("secantus")
    return server.database_url(fresh_database_name("baton_e2e"))
