"""BatonClient: every call of the API, answered as it returns (httpx.Client underneath).

    with BatonClient("http://127.0.0.1:8080", token="...") as baton:
        created = baton.submit("create_mysql_instance", {"name": "app_db"}, idempotency_key="order-1234")
        task = baton.wait(created.task_id, timeout=600)

The single-request calls come from baton_client/calls/ (shared with AsyncBatonClient); this
file adds the sending, with its retries, and what takes several requests.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from baton_client.auth import Token
from baton_client.call import Call
from baton_client.calls import Calls
from baton_client.errors import WaitTimeout, error_for_answer
from baton_client.events import EventFollower, Ended, TaskEvent, TaskShown, reconnect_pause, stream_call
from baton_client.models.listing import ItemView, TaskSummary
from baton_client.models.task import TaskDetail
from baton_client.retries import Failure, RetryPolicy, retry_delay
from baton_client.transport import (
    Answered, STREAM_READ_SECONDS, after_try, failure_of, from_environment, http_options,
    log_retry, shown_url, transport_error,
)

T = TypeVar("T")


class BatonClient(Calls):
    def __init__(self, base_url: str, token: str | Token | None = None, *, timeout: float = 30.0,
                 retry: RetryPolicy = RetryPolicy(), http: Mapping[str, Any] | None = None):  # fmt: skip
        """`token`: a token of BATON_API_TOKENS (read, submit or operator role). `timeout`:
        seconds for one request. `retry`: when a failed call is sent again (retries.py).
        `http`: more options for httpx.Client (verify, cert, proxy, event_hooks...)."""
        self._http = httpx.Client(**http_options(base_url, token, timeout, http))
        self._retry, self._timeout = retry, timeout
        self.base_url = shown_url(self._http.base_url)

    @classmethod
    def from_env(cls, **options: Any) -> BatonClient:
        """From BATON_API_URL and BATON_API_TOKEN, as `baton watch --api` reads them."""
        url, token = from_environment()
        return cls(url, token, **options)

    def __repr__(self) -> str:
        return f"BatonClient({self.base_url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BatonClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            answer, error = None, None
            try:
                answer = self._http.request(call.method, call.path, params=call.query(), json=call.json())
            except httpx.TransportError as exc:
                error = exc
            step = after_try(call, self._retry, attempt, random.random(), answer, error)
            if isinstance(step, Answered):
                return step.value
            log_retry(call, self._retry, attempt, step.failure, step.delay)
            time.sleep(step.delay)

    def events(self, task_id: str, *, last_event_id: str | None = None,
               timeout: float | None = None) -> Generator[TaskEvent, None, None]:  # fmt: skip
        """The task's changes as they happen (events.py): Change, TaskShown, Progress, then
        Ended, where the iteration stops. A dropped connection is resumed where it stopped;
        `last_event_id` (a TaskShown's event_id) resumes an earlier reading. WaitTimeout after
        `timeout` seconds without the end (None: no limit)."""
        follower = EventFollower(last_event_id)
        deadline = None if timeout is None else time.monotonic() + timeout
        failures = 0
        while not follower.ended:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise WaitTimeout(f"task {task_id} did not end within {timeout:g} s")
            stream = stream_call(task_id, remaining)
            follower.reconnecting()
            try:
                with self._http.stream("GET", stream.path, params=stream.query(), headers=follower.headers(),
                                       timeout=httpx.Timeout(self._timeout, read=STREAM_READ_SECONDS)) as answer:  # fmt: skip
                    if answer.status_code == 200:
                        for line in answer.iter_lines():
                            for event in follower.feed(line):
                                failures = 0  # it reads again: a later failure starts a fresh count
                                yield event
                            if follower.ended:
                                return
                        continue  # the server ended this connection (its timeout): open the next
                    error = error_for_answer(answer.status_code, answer.read())
                    if answer.status_code != 503:
                        raise error
                    failure = Failure.UNAVAILABLE
            except httpx.TransportError as exc:
                failure = failure_of(exc)
                error = transport_error(stream, failure, exc, failures + 1)
            failures += 1
            delay = retry_delay(self._retry, failures, failure, True, random.random())
            if delay is None:
                raise error
            log_retry(stream, self._retry, failures, failure, delay)
            time.sleep(reconnect_pause(delay, deadline, time.monotonic()))

    def wait(self, task_id: str, *, timeout: float | None = 600.0) -> TaskDetail:
        """The task once it has ended (SUCCESS, ROLLED_BACK or ROLLBACK_FAILED: check
        `TaskStatus`), followed through its event stream. WaitTimeout after `timeout` s."""
        last: TaskDetail | None = None
        with contextlib.closing(self.events(task_id, timeout=timeout)) as events:
            for event in events:
                if isinstance(event, TaskShown):
                    last = event.task
                elif isinstance(event, Ended):
                    break
        return last if last is not None else self.get_task(task_id)

    def iter_tasks(self, *, page_size: int = 100, **filters: Any) -> Iterator[TaskSummary]:
        """Every task list_tasks' filters select, newest first, a page at a time."""
        cursor = None
        while True:
            page = self.list_tasks(**filters, cursor=cursor, limit=page_size)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def iter_items(self, task_id: str, step: int | str, *, state: str | Sequence[str] | None = None,
                   page_size: int = 100) -> Iterator[ItemView]:  # fmt: skip
        """Every item of a for_each step (in `state`), in item order, a page at a time."""
        after = None
        while True:
            page = self.list_items(task_id, step, state=state, after=after, limit=page_size)
            yield from page.Items
            if page.NextAfter is None:
                return
            after = page.NextAfter
