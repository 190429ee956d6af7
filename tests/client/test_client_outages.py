"""The client through real outages: `baton oss` as a process on a SecantusDB server of the test's
own (a real MongoDB wire-protocol server) and a RabbitMQ vhost.

- The store stopped: OSS answers 503 (`store_unavailable`); a read and a submission with an
  idempotency key are sent again until the server is back, and succeed; the submission creates
  one task. A call that is not safe to repeat (a cancel) raises Unavailable after one request.
- OSS itself killed (SIGKILL) under a reader of a task's event stream and started again: the
  reading goes on where it stopped, each change once, to the end.

Each outage ends once the client has logged a retry (a state, not a time): the server is started
again by a thread that waits for that log record.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.client.live import OPERATOR, LoneOss, lone_oss
from tests.support.secantus import SecantusServer, fresh_database_name, secantus_server

from baton_client import BatonClient, Change, Ended, RetryPolicy, TaskShown, TaskStatus, Unavailable

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
# Generous: SecantusDB or OSS may take many seconds to start again on a loaded machine.
PATIENT = RetryPolicy(attempts=300, initial=0.1, max_delay=1.0)
WHY = "client outage test"


@pytest.fixture(scope="module")
def servers(rabbitmq_url, tmp_path_factory) -> Iterator[tuple[SecantusServer, LoneOss]]:
    with secantus_server("baton-client") as server:
        store = server.database_url(fresh_database_name("baton_client"))
        # The store's own timeout short: a request during the outage answers 503 in about 2 s.
        with lone_oss(tmp_path_factory.mktemp("outage"), store, rabbitmq_url,
                      {"BATON_STORE_TIMEOUT_SECONDS": "2", "BATON_LEASE_SECONDS": "30"}) as oss:  # fmt: skip
            yield server, oss


class Retries(logging.Handler):
    """The client's retry log records; `seen` is set by the first that `wanted` accepts."""

    def __init__(self, wanted: Callable[[logging.LogRecord], bool]):
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.wanted, self.seen = wanted, threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.wanted(record):
            self.seen.set()


@contextlib.contextmanager
def retries_watched(wanted: Callable[[logging.LogRecord], bool]) -> Iterator[Retries]:
    logger = logging.getLogger("baton_client")
    handler, level = Retries(wanted), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@contextlib.contextmanager
def back_after(retries: Retries, bring_back: Callable[[], None]) -> Iterator[None]:
    """Runs `bring_back` in a thread once the first retry `retries` waits for was logged."""
    failed: list[BaseException] = []

    def restore() -> None:
        try:
            assert retries.seen.wait(300), "the client never retried"
        finally:
            try:
                bring_back()
            except BaseException as exc:  # noqa: BLE001  (handed to the test below)
                failed.append(exc)

    thread = threading.Thread(target=restore, name="client-test-restore", daemon=True)
    thread.start()
    try:
        yield
    finally:
        retries.seen.set()  # the block failed before its retry: bring the server back anyway
        thread.join(300)
        assert not failed, failed


def unavailable(call: str) -> Callable[[logging.LogRecord], bool]:
    return lambda r: getattr(r, "baton_failure", "") == "UNAVAILABLE" and getattr(r, "baton_call", "") == call


def test_reads_and_keyed_submissions_go_through_a_store_outage_and_unsafe_calls_do_not_repeat(servers) -> None:
    server, oss = servers
    sent: list[str] = []
    hooks = {"request": [lambda request: sent.append(f"{request.method} {request.url.path}")]}
    labels = {"run": uuid.uuid4().hex[:12]}
    with BatonClient(oss.url, OPERATOR, retry=PATIENT, http={"event_hooks": hooks}) as baton:
        created = baton.submit("provision", {"name": "db1"}, idempotency_key=f"a-{labels['run']}", labels=labels)
        path = f"/api/v1/tasks/{created.task_id}"

        server.stop()
        with retries_watched(unavailable(f"GET {path}")) as retries, back_after(retries, server.start):
            sent.clear()
            with pytest.raises(Unavailable) as refused:
                baton.cancel(created.task_id, WHY)
            assert refused.value.code == "store_unavailable" and sent == [f"POST {path}/cancel"]
            task = baton.get_task(created.task_id)  # sent again until the store is back
        assert task.TaskId == created.task_id and task.TaskStatus is TaskStatus.NOT_STARTED
        assert sent.count(f"GET {path}") >= 2 and not [r for r in retries.records if "cancel" in r.baton_call]

        server.stop()
        with retries_watched(unavailable("POST /api/v1/tasks")) as retries, back_after(retries, server.start):
            second = baton.submit("provision", {"name": "db2"}, idempotency_key=f"b-{labels['run']}", labels=labels)
        assert retries.seen.is_set() and baton.get_task(second.task_id).Parameters["name"] == "db2"
        assert baton.list_tasks(labels=labels).total == 2  # one task for the key, however many times it was sent


def test_an_event_stream_goes_on_where_it_stopped_after_oss_is_killed_and_started_again(servers) -> None:
    _, oss = servers
    with BatonClient(oss.url, OPERATOR, retry=PATIENT) as baton:
        created = baton.submit("provision", {"name": "db1"}, labels={"run": uuid.uuid4().hex[:12]})
        changes: list[str] = []
        with contextlib.closing(baton.events(created.task_id, timeout=300)) as events:
            for event in events:  # no module runs it: it waits, NOT_STARTED, once shown
                if isinstance(event, Change):
                    changes.append(event.event.Event)
                if isinstance(event, TaskShown):
                    break

            def start_and_cancel() -> None:
                oss.start()
                with BatonClient(oss.url, OPERATOR, retry=PATIENT) as operator:
                    operator.cancel(created.task_id, WHY)

            lost = lambda r: r.baton_call.endswith("/events")  # noqa: E731
            with retries_watched(lost) as retries, back_after(retries, start_and_cancel):
                oss.kill()
                rest = list(events)
        assert retries.seen.is_set() and isinstance(rest[-1], Ended) and rest[-1].status is TaskStatus.ROLLED_BACK
        changes += [e.event.Event for e in rest if isinstance(e, Change)]
        assert changes == [e.Event for e in baton.get_task(created.task_id).History]
        assert changes.count("cancel_requested") == 1


def test_the_outage_is_real_oss_answers_503_while_the_store_is_stopped(servers) -> None:
    """What the client retries through: OSS's own answer, not a failure of the client's making."""
    server, oss = servers
    server.stop()
    try:
        answer = httpx.get(f"{oss.url}/api/v1/tasks", headers={"Authorization": f"Bearer {OPERATOR}"}, timeout=60)
    finally:
        server.start()
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "store_unavailable"
