"""AsyncBatonClient: every call of BatonClient, awaited (httpx.AsyncClient underneath).

    async with AsyncBatonClient("http://127.0.0.1:8080", token="...") as baton:
        created = await baton.submit("create_mysql_instance", {"name": "app_db"}, idempotency_key="order-1234")
        task = await baton.wait(created.task_id, timeout=600)

The calls are the same definitions as BatonClient's (baton_client/calls/); this file is the
awaiting twin of sync_client.py, line for line: read that one's comments.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
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


class AsyncBatonClient(Calls):
    def __init__(self, base_url: str, token: str | Token | None = None, *, timeout: float = 30.0,
                 retry: RetryPolicy = RetryPolicy(), http: Mapping[str, Any] | None = None):  # fmt: skip
        """As BatonClient's; `http` goes to httpx.AsyncClient."""
        self._http = httpx.AsyncClient(**http_options(base_url, token, timeout, http))
        self._retry, self._timeout = retry, timeout
        self.base_url = shown_url(self._http.base_url)

    @classmethod
    def from_env(cls, **options: Any) -> AsyncBatonClient:
        url, token = from_environment()
        return cls(url, token, **options)

    def __repr__(self) -> str:
        return f"AsyncBatonClient({self.base_url!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncBatonClient:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            answer, error = None, None
            try:
                answer = await self._http.request(call.method, call.path, params=call.query(), json=call.json())
            except httpx.TransportError as exc:
                error = exc
            step = after_try(call, self._retry, attempt, random.random(), answer, error)
            if isinstance(step, Answered):
                return step.value
            log_retry(call, self._retry, attempt, step.failure, step.delay)
            await asyncio.sleep(step.delay)

    async def events(self, task_id: str, *, last_event_id: str | None = None,
                     timeout: float | None = None) -> AsyncGenerator[TaskEvent, None]:  # fmt: skip
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
                async with self._http.stream("GET", stream.path, params=stream.query(), headers=follower.headers(),
                                             timeout=httpx.Timeout(self._timeout, read=STREAM_READ_SECONDS)) as answer:  # fmt: skip
                    if answer.status_code == 200:
                        async for line in answer.aiter_lines():
                            for event in follower.feed(line):
                                failures = 0
                                yield event
                            if follower.ended:
                                return
                        continue
                    error = error_for_answer(answer.status_code, await answer.aread())
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
            await asyncio.sleep(reconnect_pause(delay, deadline, time.monotonic()))

    async def wait(self, task_id: str, *, timeout: float | None = 600.0) -> TaskDetail:
        last: TaskDetail | None = None
        async with contextlib.aclosing(self.events(task_id, timeout=timeout)) as events:
            async for event in events:
                if isinstance(event, TaskShown):
                    last = event.task
                elif isinstance(event, Ended):
                    break
        return last if last is not None else await self.get_task(task_id)

    async def iter_tasks(self, *, page_size: int = 100, **filters: Any) -> AsyncIterator[TaskSummary]:
        cursor = None
        while True:
            page = await self.list_tasks(**filters, cursor=cursor, limit=page_size)
            for task in page.items:
                yield task
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def iter_items(self, task_id: str, step: int | str, *, state: str | Sequence[str] | None = None,
                         page_size: int = 100) -> AsyncIterator[ItemView]:  # fmt: skip
        after = None
        while True:
            page = await self.list_items(task_id, step, state=state, after=after, limit=page_size)
            for item in page.Items:
                yield item
            if page.NextAfter is None:
                return
            after = page.NextAfter
