"""The client against a live OSS: `baton oss`, the resource and mysql modules (stand-in commands)
and a sweeper, each a real process, on a RabbitMQ vhost of their own and a SQLite store
(BATON_TEST_STORE=mongo: a database of its own on SecantusDB).

Submit (an idempotency key answering the same task), get, list and page, wait for the end,
follow the event stream and resume it in another reading, every operator action on a task in
the state it fits, plans, a for_each step's items, the calls around the tasks, the errors the
server answers; then the async client over the same calls. And the examples of
docs/guide/client.md, run in order as the page says, printing what it shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import Iterator

import pytest

from tests.client.live import OPERATOR, READER, deployment
from tests.support.cluster import STATE_DEADLINE, wait_until
from tests.support.doc_examples import REPO, page_blocks
from tests.support.test_store import cluster_mongo_url

from baton_client import (
    AsyncBatonClient, BatonClient, Change, Conflict, Ended, Forbidden, InvalidInput, NotFound, TaskShown, TaskStatus,
    Unauthorized,
)  # fmt: skip

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
WHY = "client test"


@pytest.fixture(scope="module")
def base_url(rabbitmq_url, tmp_path_factory, request) -> Iterator[str]:
    with deployment(tmp_path_factory.mktemp("client"), rabbitmq_url, cluster_mongo_url(request)) as url:
        yield url


@pytest.fixture
def baton(base_url) -> Iterator[BatonClient]:
    with BatonClient(base_url, token=OPERATOR) as client:
        yield client


def run_label() -> dict[str, str]:
    return {"run": uuid.uuid4().hex[:12]}


def fail(command: str, phase: str = "normal", times: int | None = None) -> dict:
    rule = {"command": command, "action": "fail", "phase": phase}
    return rule if times is None else {**rule, "times": times}


def running_step(baton: BatonClient, task_id: str, cursor: int) -> None:
    def claimed() -> bool:
        return any(e.Event == "claimed" and e.Cursor == cursor for e in baton.get_task(task_id).History)

    wait_until(claimed, 60, f"step {cursor} of {task_id} claimed")


def test_submit_with_a_key_answers_the_same_task_and_wait_returns_it_ended(baton) -> None:
    labels = run_label()
    created = baton.submit("provision", {"name": "db1"}, idempotency_key=f"order-{labels['run']}", labels=labels)
    again = baton.submit("provision", {"name": "db1"}, idempotency_key=f"order-{labels['run']}", labels=labels)
    assert (created.created, again.created, again.task_id) == (True, False, created.task_id)
    assert created.location.endswith(created.task_id) and created.task.TaskStatus is TaskStatus.NOT_STARTED

    task = baton.wait(created.task_id, timeout=STATE_DEADLINE)
    assert task.TaskStatus is TaskStatus.SUCCESS and task.ended
    assert [s.State for s in task.Steps] == ["succeeded"] * 3
    shown = baton.get_task(created.task_id)
    assert shown.SubmittedParameters == {"name": "db1", "hold": 0.05} and shown.Parameters["did_c"] is True
    assert [a.Outcome for a in shown.Attempts] == ["ok"] * 3
    page = baton.list_tasks(labels=labels)
    assert (page.total, [t.TaskId for t in page.items], page.counts["SUCCESS"]) == (1, [created.task_id], 1)


def test_list_filters_and_iter_tasks_pages_through_every_match(baton) -> None:
    labels = run_label()
    made = [baton.submit("provision", {"name": f"db{i}"}, labels=labels).task_id for i in range(5)]
    first = baton.list_tasks(labels=labels, limit=2)
    assert (first.total, len(first.items), first.next_cursor is not None) == (5, 2, True)
    assert [t.TaskId for t in baton.iter_tasks(labels=labels, page_size=2)] == made[::-1]  # newest first
    for task_id in made:
        baton.wait(task_id, timeout=STATE_DEADLINE)
    assert baton.list_tasks(labels=labels, status=TaskStatus.SUCCESS).total == 5
    assert baton.list_tasks(labels=labels, status="rolled_back").total == 0
    assert [t.TaskId for t in baton.list_tasks(labels=labels, search=made[3][:12]).items] == [made[3]]


def test_the_event_stream_gives_each_change_once_across_a_resumed_reading(baton) -> None:
    created = baton.submit("provision", {"name": "db1", "hold": 1.0}, labels=run_label())
    seen: list[str] = []
    with contextlib.closing(baton.events(created.task_id, timeout=STATE_DEADLINE)) as events:
        for event in events:
            if isinstance(event, Change):
                seen.append(event.event.Event)
            elif isinstance(event, TaskShown):
                resume_at = event.event_id
                break  # a reader stops here; another picks up from the id
    resumed = []
    for event in baton.events(created.task_id, last_event_id=resume_at, timeout=STATE_DEADLINE):
        resumed.append(event)
    assert isinstance(resumed[-1], Ended) and resumed[-1].status is TaskStatus.SUCCESS
    seen += [e.event.Event for e in resumed if isinstance(e, Change)]
    assert seen == [e.Event for e in baton.get_task(created.task_id).History]


def test_pause_and_resume_a_running_task(baton) -> None:
    created = baton.submit("catching_up", labels=run_label())
    running_step(baton, created.task_id, 1)  # and it keeps running: never caught up
    paused = baton.pause(created.task_id, WHY)
    assert paused.Paused is not None and paused.Paused.Reason == WHY
    resumed = baton.resume(created.task_id, WHY)
    assert resumed.Paused is None and resumed.TaskStatus is TaskStatus.RUNNING
    baton.cancel(created.task_id, WHY, stop_running=True)
    assert baton.wait(created.task_id, timeout=STATE_DEADLINE).TaskStatus is TaskStatus.ROLLED_BACK


def test_cancel_stopping_the_running_step_rolls_the_task_back(baton) -> None:
    created = baton.submit("provision", {"name": "db1", "hold": 60}, labels=run_label())
    running_step(baton, created.task_id, 1)
    assert baton.cancel(created.task_id, WHY, stop_running=True).CancelRequested.Reason == WHY
    task = baton.wait(created.task_id, timeout=STATE_DEADLINE)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK
    with pytest.raises(Conflict) as refused:
        baton.cancel(created.task_id, WHY)  # it has ended: nothing to cancel
    assert refused.value.status == 409 and "ROLLED_BACK" in refused.value.message


def test_retry_and_skip_a_rolled_back_task(baton) -> None:
    created = baton.submit("provision", {"name": "db1", "_baton_faults": [fail("step_c")]}, labels=run_label())
    assert baton.wait(created.task_id, timeout=STATE_DEADLINE).TaskStatus is TaskStatus.ROLLED_BACK
    retried = baton.retry(created.task_id, WHY)
    assert retried.Generation == 1 and [(e.Actor, e.Message) for e in retried.History if e.Event == "retried"] == [
        ("olga", WHY)]
    assert baton.wait(created.task_id, timeout=STATE_DEADLINE).TaskStatus is TaskStatus.ROLLED_BACK  # the fault holds
    baton.skip(created.task_id, WHY, step=2)
    task = baton.wait(created.task_id, timeout=STATE_DEADLINE)
    assert task.TaskStatus is TaskStatus.SUCCESS and task.Steps[2].State == "operator_skipped"


def test_retry_rollback_and_compensate_a_failed_rollback(baton) -> None:
    faults = [fail("step_c"), fail("undo_a", "rollback")]
    created = baton.submit("provision", {"name": "db1", "_baton_faults": faults}, labels=run_label())
    assert baton.wait(created.task_id, timeout=STATE_DEADLINE).TaskStatus is TaskStatus.ROLLBACK_FAILED
    baton.retry_rollback(created.task_id, WHY)  # runs undo_a again: the fault fails it again
    task = baton.wait(created.task_id, timeout=STATE_DEADLINE)
    assert task.TaskStatus is TaskStatus.ROLLBACK_FAILED
    assert [a.Outcome for a in task.Attempts if a.Cursor == 0 and a.Phase == 1] == ["failed", "failed"]
    baton.compensate(created.task_id, "undone by hand")
    task = baton.wait(created.task_id, timeout=STATE_DEADLINE)
    assert task.TaskStatus is TaskStatus.ROLLED_BACK and task.Steps[0].State == "compensated"


def test_a_plan_says_what_would_run_and_creates_nothing(baton) -> None:
    labels = run_label()
    plan = baton.plan("provision", {"name": "db1"}, labels=labels)
    assert [s.name for s in plan.steps] == ["reserve", "create", "finish"] and plan.start.when == "now"
    assert {m.module: m.live for m in plan.modules} == {"resource": True, "mysql": True}
    assert baton.list_tasks(labels=labels).total == 0


def test_a_for_each_steps_items_come_a_page_at_a_time(baton) -> None:
    created = baton.submit("fleet", {"nodes": [f"n{i}" for i in range(5)]}, labels=run_label())
    assert baton.wait(created.task_id, timeout=STATE_DEADLINE).TaskStatus is TaskStatus.SUCCESS
    page = baton.list_items(created.task_id, "per_node", limit=2)
    assert (page.ItemCount, [i.Item for i in page.Items], page.NextAfter) == (5, [0, 1], 1)
    assert [i.Value for i in baton.iter_items(created.task_id, 0, state="succeeded", page_size=2)] == [
        f"n{i}" for i in range(5)]


def test_the_server_errors_are_raised_as_what_they_mean(base_url, baton) -> None:
    with pytest.raises(NotFound):
        baton.get_task("no-such-task")
    with pytest.raises(InvalidInput) as invalid:
        baton.submit("provision", {"name": "Not A Name"})
    assert [f.path for f in invalid.value.fields] == ["parameters.name"]
    key = f"order-{uuid.uuid4().hex}"
    baton.submit("provision", {"name": "db1"}, idempotency_key=key)
    with pytest.raises(Conflict) as reused:
        baton.submit("provision", {"name": "db2"}, idempotency_key=key)
    assert reused.value.code == "idempotency_conflict" and [f.path for f in reused.value.fields] == ["parameters.name"]
    with BatonClient(base_url, token="not-a-token-0123456789") as stranger, pytest.raises(Unauthorized):
        stranger.list_tasks()
    with BatonClient(base_url, token=READER) as reader, pytest.raises(Forbidden):
        reader.cancel("whatever", WHY)


def test_the_calls_around_the_tasks(baton) -> None:
    provision = baton.get_task_type("provision")
    assert [t.name for t in baton.list_task_types()] == [
        "provision", "fleet", "create_mysql_instance", "catching_up", "parked"]
    moved = baton.migrate("provision", provision.content_hash, WHY)
    assert moved.dry_run and moved.to_hash == provision.content_hash
    bulk = baton.bulk("cancel", WHY, labels=run_label())
    assert (bulk.dry_run, bulk.matched, bulk.applied) == (True, 0, [])

    assert baton.acknowledge_alarms(WHY, ids=["no-such-alarm"]).unknown == ["no-such-alarm"]
    assert isinstance(baton.list_alarms(acknowledged=False), list)
    with pytest.raises(NotFound):
        baton.acknowledge_alarm("no-such-alarm")

    host = f"h-{uuid.uuid4().hex[:8]}"
    assert baton.add_host(host, cpu=4, memory_mb=4096, storage_gb=100).free.cpu == 4
    assert baton.drain_host(host).state == "draining"
    assert baton.activate_host(host).state == "active" and host in [h.name for h in baton.list_hosts()]

    name = f"s-{uuid.uuid4().hex[:8]}"
    schedule = baton.create_schedule(name, "provision", {"name": "db1"}, interval_seconds=3600)
    assert baton.get_schedule(name).ScheduleId == schedule.ScheduleId
    assert baton.pause_schedule(name).Paused and not baton.resume_schedule(name).Paused
    assert name in [s.Name for s in baton.list_schedules()]
    baton.delete_schedule(name)
    with pytest.raises(NotFound):
        baton.get_schedule(name)

    assert {m.module for m in baton.list_modules() if m.live} >= {"resource", "mysql"}
    assert baton.drain_module("spare", WHY).drained and not baton.undrain_module("spare", WHY).drained
    assert baton.list_locks() == []
    assert baton.health().status == "ok" and baton.ready().ready
    assert "baton_tasks_created_total" in baton.metrics()


def test_the_async_client_makes_the_same_calls(base_url) -> None:
    async def scenario() -> None:
        labels = run_label()
        async with AsyncBatonClient(base_url, token=OPERATOR) as baton:
            created = await baton.submit("provision", {"name": "db1"}, idempotency_key=labels["run"], labels=labels)
            kinds = [type(event).__name__ async for event in baton.events(created.task_id, timeout=STATE_DEADLINE)]
            assert kinds[-2:] == ["TaskShown", "Ended"] and "Change" in kinds
            task = await baton.wait(created.task_id, timeout=STATE_DEADLINE)
            assert task.TaskStatus is TaskStatus.SUCCESS
            assert [t.TaskId async for t in baton.iter_tasks(labels=labels, page_size=1)] == [created.task_id]
            assert (await baton.submit("provision", {"name": "db1"}, idempotency_key=labels["run"],
                                       labels=labels)).created is False  # fmt: skip
            with pytest.raises(Conflict):
                await baton.cancel(created.task_id, WHY)
            with pytest.raises(NotFound):
                await baton.get_task("no-such-task")

    asyncio.run(scenario())


def test_the_guides_examples_run_in_order_and_print_what_the_page_shows(base_url, monkeypatch, capsys) -> None:
    monkeypatch.setenv("BATON_API_URL", base_url)
    monkeypatch.setenv("BATON_API_TOKEN", OPERATOR)
    page = REPO / "docs" / "guide" / "client.md"
    blocks = [b for b in page_blocks(page) if b.lang in ("python", "text")]
    namespace: dict = {}
    printed: dict[str, str] = {}  # a block's heading -> what its code printed
    try:
        for block in blocks:
            if block.lang == "python":
                exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102  (the page's own code)
                printed[block.heading] = printed.get(block.heading, "") + capsys.readouterr().out
    finally:
        namespace["baton"].close()
    shown = {b.heading: b.code for b in blocks if b.lang == "text"}
    assert re.fullmatch(r"[0-9a-f]{32} SUCCESS \['succeeded', 'succeeded', 'succeeded'\]\n", printed["A worked example"])
    assert shown["A worked example"].split(" ", 1)[1] == printed["A worked example"].split(" ", 1)[1]
    assert printed["Errors"] == shown["Errors"]
    assert "ended SUCCESS" in printed["Following a task as it runs"]
    assert printed["Retries"] == "ok True\n" and printed["Async"] == "SUCCESS\n"
