"""Which stores the store contract suite runs against, and how to open each one.

Every run covers SQLite (a temp file), mongomock (an in-memory fake) and SecantusDB (a real
MongoDB wire-protocol server, a pinned test dependency, started once per session: see
tests.support.secantus). A MongoDB server is added when one is reachable: BATON_TEST_MONGO_URL,
or a container started through testcontainers when a Docker engine answers. mongomock is never
passed off as a server: the tests are named "mongo-mongomock", "mongo-secantus" and "mongo-real",
and the report header says which ran and why.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from common.engine.document import Task
from common.store.mongo.tasks import MongoStore
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from common.store.sqlite.tasks import SqliteStore
from common.engine.core.entries import Refusal
from tests.support import secantus
from tests.support.naming import unique_name

MONGO_URL_ENV = "BATON_TEST_MONGO_URL"
MONGO_IMAGE = "mongo:7.0"
DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock"


@dataclass(frozen=True)
class MongoPlan:
    """Where the real-MongoDB tests run, decided once per session before collection."""

    source: str | None  # "env" | "testcontainers" | None: no real MongoDB this run
    why: str

    @property
    def real(self) -> bool:
        return self.source is not None


@functools.cache
def mongo_plan() -> MongoPlan:
    if os.environ.get(MONGO_URL_ENV):
        return MongoPlan("env", f"{MONGO_URL_ENV} is set")
    engine = _docker_engine_problem()
    if engine is None:
        return MongoPlan("testcontainers", f"a Docker engine answered ({MONGO_IMAGE} container)")
    return MongoPlan(None, f"no {MONGO_URL_ENV} and no Docker engine ({engine})")


def _docker_engine_problem() -> str | None:
    """None when a Docker engine answers a ping within two seconds, else why not."""
    if not os.environ.get("DOCKER_HOST") and not os.path.exists(DEFAULT_DOCKER_SOCKET):
        # Where docker.from_env() would look; asking it anyway leaks a socket when it is absent.
        return f"DOCKER_HOST unset and no {DEFAULT_DOCKER_SOCKET}"
    try:
        import docker

        client = docker.from_env(timeout=2)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as e:  # any failure at all means "no engine to use"
        return type(e).__name__
    return None


def store_kinds() -> list[str]:
    kinds = ["sqlite", "mongo-mongomock", "mongo-secantus"]
    if mongo_plan().real:
        kinds.append("mongo-real")
    return kinds


def report_header() -> list[str]:
    plan = mongo_plan()
    servers = ["mongo-mongomock (an in-memory fake, not a server)"]
    if secantus.available():
        version = importlib.metadata.version("SecantusDB")
        servers.append(f"mongo-secantus (SecantusDB {version}, a real wire-protocol server process)")
    else:
        servers.append("mongo-secantus NOT RUN: SecantusDB is not installed (a failure under CI=true)")
    if plan.real:
        servers.append(f"mongo-real (a MongoDB server: {plan.why})")
    else:
        servers.append(f"no mongo-real: {plan.why}")
    return [f"store contract: sqlite (temp file); Mongo store: {'; '.join(servers)}"]


# --- opening stores ------------------------------------------------------------------------------


@dataclass
class StoreUnderTest:
    kind: str
    store: TaskStore
    raw_task_doc: Callable[[str], dict[str, Any]]  # the document as the backend holds it


def open_sqlite(path: str) -> StoreUnderTest:
    def raw(task_id: str) -> dict[str, Any]:
        sql = "SELECT doc FROM tasks WHERE task_id = ?"
        with contextlib.closing(sqlite3.connect(path)) as conn:
            (doc,) = conn.execute(sql, (task_id,)).fetchone()
        return json.loads(doc)  # type: ignore[no-any-return]

    return StoreUnderTest("sqlite", SqliteStore(path), raw)


def open_mongo(kind: str, client: Any, database: str) -> StoreUnderTest:
    def raw(task_id: str) -> dict[str, Any]:
        doc: dict[str, Any] = client[database]["tasks"].find_one({"TaskId": task_id})
        return doc

    return StoreUnderTest(kind, MongoStore(client, database), raw)


@pytest.fixture(scope="session")
def real_mongo_url() -> Iterator[str]:
    """The URL of the real MongoDB server for this session (a container when started here)."""
    plan = mongo_plan()
    if plan.source == "env":
        yield os.environ[MONGO_URL_ENV]
        return
    if plan.source != "testcontainers":
        pytest.fail("real_mongo_url requested although no real MongoDB was planned")
    try:
        from testcontainers.community.mongodb import MongoDbContainer
    except ImportError:  # testcontainers before the "community" split
        from testcontainers.mongodb import MongoDbContainer
    with MongoDbContainer(MONGO_IMAGE) as container:
        yield container.get_connection_url()


@pytest.fixture(scope="session")
def real_mongo_client(real_mongo_url: str) -> Iterator[Any]:
    from pymongo import MongoClient

    # A keyword would override the URL's own timeout; add one only where the URL has none.
    has_timeout = "serverselectiontimeoutms" in real_mongo_url.lower()
    options = {} if has_timeout else {"serverSelectionTimeoutMS": 10_000}
    client: Any = MongoClient(real_mongo_url, **options)
    try:
        client.admin.command("ping")
    except Exception as e:
        # Asked for explicitly (URL or Docker): unreachable is a failure, never a silent skip.
        pytest.fail(f"the real MongoDB planned for this run does not answer: {e}")
    yield client
    client.close()


def server_client_fixture(kind: str) -> str:
    """The session fixture giving the client of a server kind ("mongo-secantus", "mongo-real")."""
    return {"mongo-secantus": "secantus_client", "mongo-real": "real_mongo_client"}[kind]


def fresh_database_name() -> str:
    return unique_name("baton_contract", sep="_")


@pytest.fixture(params=store_kinds())
def subject(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[StoreUnderTest]:
    """The store of the parametrized kind, empty, closed (and for MongoDB dropped) afterwards."""
    kind: str = request.param
    if kind == "sqlite":
        opened = open_sqlite(str(tmp_path / "tasks.db"))
        yield opened
        opened.store.close()
        return
    if kind == "mongo-mongomock":
        import mongomock

        # A client of its own: a server nobody else touches, gone with the test.
        yield open_mongo(kind, mongomock.MongoClient(), fresh_database_name())
        return
    client = request.getfixturevalue(server_client_fixture(kind))
    database = fresh_database_name()
    opened = open_mongo(kind, client, database)
    try:
        yield opened
    finally:
        opened.store.close()
        client.drop_database(database)


# --- work done in other processes ----------------------------------------------------------------


@pytest.fixture
def store(subject: StoreUnderTest) -> Any:
    return subject.store


def count_in_process(
    path: str, task_id: str, worker: str, rounds: int, start: Any, tries: Any, wait: float
) -> None:
    """Entry point of a spawned process: `rounds` read-modify-writes on one task, own store.

    Waits at the `start` barrier so the processes really overlap (up to `wait` s for the last
    one's start: seconds of imports each, far more on a loaded machine), and adds to `tries` how
    often its change ran: more than `rounds` means it lost races and re-read.
    """
    store = SqliteStore(path)
    ran = 0

    def change(task: Task) -> Task:
        nonlocal ran
        ran += 1
        return bump_counter(task, worker)

    try:
        start.wait(timeout=wait)
        for _ in range(rounds):
            result = mutate(store, task_id, change)
            if isinstance(result, Refusal):
                raise RuntimeError(result.reason)
    finally:
        store.close()
        with tries.get_lock():
            tries.value += ran


def bump_counter(task: Task, worker: str) -> Task:
    """+1 on the shared counter and on the worker's own: a lost update shows in either."""
    new = task.model_copy()
    params = dict(task.Parameters)
    params["count"] = params.get("count", 0) + 1
    params[worker] = params.get(worker, 0) + 1
    new.Parameters = params
    return new
