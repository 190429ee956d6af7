"""One connected trace per task, through real processes: OSS (uvicorn) and three modules on the
real RabbitMQ, one per kind of command (tests/support/traced_commands.py), exporting over
OTLP/HTTP to a receiver the test starts (tests/support/otlp_receiver.py), no collector.

A task with a retry, a sub-flow, a `for_each` and a final failure (so everything rolls back)
submitted with a W3C traceparent: every span is in the caller's trace and has its parent in it,
the attempts, retries and rollbacks are spans of their own, items and the child task are linked
to the spans that published or asked for them, and each command's own spans are children of its
command span. A module killed (SIGKILL) mid-step: the replica that takes the step over continues
the same trace. No span holds the secret canary, whatever the commands put in their own spans.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api.test_no_secret_leaks import CANARY
from tests.support.cluster import STATE_DEADLINE, Cluster, wait_until
from tests.support.otlp_receiver import OtlpReceiver, Span
from tests.support.ports import free_port

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
TOKEN = "trace-test-operator-token-0123"
PASSWORD = f"{CANARY}-traced"
FLOWS = """
version: 1
defaults: {timeout: 30, retry: 0}
task_types:
  traced:
    parameters:
      password: {type: string, secret: true}
      hosts: {type: array, default: [h1, h2]}
    steps:
      - name: prepare
        normal:   {module: tracea, command: prepare, retry: 1, backoff: {initial: 0.1}}
        rollback: {module: tracea, command: unprepare}
      - name: nested
        flow: traced_child
        inputs: {password: password}
      - name: fan
        for_each: hosts
        normal:   {module: traceb, command: touch_host}
        rollback: {module: traceb, command: untouch_host}
      - name: last
        normal:   {module: tracec, command: finish}
  traced_child:
    parameters:
      password: {type: string, secret: true}
    steps:
      - name: inside
        normal:   {module: tracec, command: child_step}
        rollback: {module: tracec, command: undo_child_step}
  taken_over:
    parameters:
      password: {type: string, secret: true}
      seconds: {type: number}
    steps:
      - name: only
        normal: {module: tracea, command: prepare, retry: 2}
"""
REGISTRIES = {"tracea": "alpha", "traceb": "beta", "tracec": "gamma"}


@pytest.fixture(scope="module")
def traced(rabbitmq_url: str, tmp_path_factory: Any) -> Iterator[tuple[Cluster, OtlpReceiver, str]]:
    receiver = OtlpReceiver().start()
    port = free_port()
    env = {"BATON_API_TOKENS": f"olga:{TOKEN}:operator", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
           "OTEL_BSP_SCHEDULE_DELAY": "200", "BATON_PROCESS_SLOTS": "2"}  # fmt: skip
    cluster = Cluster(tmp_path_factory.mktemp("traces"), rabbitmq_url, FLOWS, extra_env=env)
    try:
        with cluster.starting():  # side by side
            for module, registry in REGISTRIES.items():
                cluster.start_module(module, registry=f"tests.support.traced_commands:{registry}")
            cluster.start_module("tracea", name="tracea-2", registry="tests.support.traced_commands:alpha")
            cluster.start_oss(port)
        yield cluster, receiver, f"http://127.0.0.1:{port}"
    finally:
        cluster.stop_all()
        receiver.stop()


def _submit(base: str, task_type: str, parameters: dict[str, Any]) -> tuple[str, str, str]:
    """POST /tasks as part of a caller's trace: (task id, trace id, the caller's span id)."""
    trace_id, caller = secrets.token_hex(16), secrets.token_hex(8)
    answer = httpx.post(f"{base}/api/v1/tasks", json={"task_type": task_type, "parameters": parameters},
                        headers={"Authorization": f"Bearer {TOKEN}", "traceparent": f"00-{trace_id}-{caller}-01"},
                        timeout=STATE_DEADLINE)  # fmt: skip
    assert answer.status_code == 201, answer.text
    return answer.json()["task_id"], trace_id, caller


def _by_name(spans: list[Span], name: str) -> list[Span]:
    return [s for s in spans if s.name == name]


def _one(spans: list[Span], name: str) -> Span:
    found = _by_name(spans, name)
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def _complete(spans: list[Span], attempts: int) -> bool:
    """All the attempts are there, and every span's parent (but the request's: the caller's)."""
    ids = {s.span_id for s in spans}
    return (len([s for s in spans if s.kind == "CONSUMER"]) >= attempts
            and all(s.parent_id in ids for s in spans if s.kind != "SERVER"))  # fmt: skip


def test_a_task_with_a_retry_a_sub_flow_a_for_each_and_a_rollback_is_one_connected_trace(traced):
    cluster, receiver, base = traced
    faults = [{"command": "prepare", "action": "fail", "times": 1},
              {"command": "finish", "action": "fail", "retryable": False}]  # fmt: skip
    task_id, trace_id, caller = _submit(base, "traced", {"password": PASSWORD, "_baton_faults": faults})
    task = cluster.wait_final(task_id, timeout=120)
    assert task.TaskStatus.name == "ROLLED_BACK", task.TaskMessage
    child_id = task.Steps[1].ChildTaskId
    # Everything the task did, once every process exported it: four processes export on their
    # own schedules, so a command's own span can arrive before its attempt's (made at the
    # attempt's end) and the last rollback before an earlier one.
    wait_until(lambda: _complete(receiver.trace(trace_id), attempts=10), 60, "every attempt and every parent")
    spans = receiver.trace(trace_id)
    by_id = {s.span_id: s for s in spans}
    assert len(by_id) == len(spans)

    # The request, in the caller's trace; the submission under it: the task's own span.
    request = _one(spans, "POST /api/v1/tasks")
    assert (request.parent_id, request.kind) == (caller, "SERVER")
    assert request.attributes["http.response.status_code"] == 201
    submit = _one(spans, "submit traced")
    assert submit.parent_id == request.span_id and submit.attributes["baton.task.id"] == task_id
    # Every span has its parent in the trace (the request's is the caller's, not exported here).
    orphans = [s.name for s in spans if s.parent_id not in by_id and s is not request]
    assert not orphans, orphans

    # The sub-flow's child task: its own span under the parent's, linked to what asked for it.
    start = _one(spans, "sub-flow traced_child")
    assert start.parent_id == submit.span_id and start.attributes["baton.task.id"] == child_id
    assert start.links and all(link[1] in by_id for link in start.links)

    attempts = [s for s in spans if s.kind == "CONSUMER"]
    for attempt in attempts:  # flat under their task's span, linked to the span that published them
        task_span = start if attempt.attributes["baton.task.id"] == child_id else submit
        assert attempt.parent_id == task_span.span_id, attempt
        assert attempt.attributes["messaging.destination.name"] == attempt.attributes["baton.module"]
        assert {by_id[c].name for c in by_id if by_id[c].parent_id == attempt.span_id} >= {"claim", "commit"}
        retried = attempt.attributes["baton.attempt"] > 1  # published by a timer after its backoff
        assert [by_id[link[1]].name in ("commit", "submit traced", "sub-flow traced_child")
                for link in attempt.links] == ([] if retried else [True]), attempt
    # The items of the for_each: each linked to the commit that opened the step.
    items = [s for s in attempts if s.name == "step fan"]
    assert len({s.links[0] for s in items}) == 1
    seen = Counter((s.name, s.attributes.get("baton.item"), s.attributes["baton.attempt"]) for s in attempts)
    assert seen == Counter({
        ("step prepare", None, 1): 1, ("step prepare", None, 2): 1,  # the retry: a span of its own
        ("step inside", None, 1): 1, ("step fan", 0, 1): 1, ("step fan", 1, 1): 1, ("step last", None, 1): 1,
        ("rollback fan", 0, 1): 1, ("rollback fan", 1, 1): 1, ("rollback inside", None, 1): 1,
        ("rollback prepare", None, 1): 1,
    }), seen
    failed = [s for s in attempts if s.status_code == 2]
    assert sorted(s.name for s in failed) == ["step last", "step prepare"]
    assert all(s.attributes["baton.code"] == "FAILED" for s in failed)

    # Each command: a span under its attempt, and the command's own span under that one,
    # whatever the kind (a command process's spans came back over its pipe).
    for attempt in attempts:
        command = next(s for s in spans if s.parent_id == attempt.span_id and s.name.startswith("command "))
        assert command.attributes["baton.command.kind"] == {"tracea": "process", "traceb": "thread",
                                                            "tracec": "async"}[attempt.attributes["baton.module"]]
        inner = [s for s in spans if s.parent_id == command.span_id]
        expect_inner = not (attempt.status_code == 2)  # an injected failure stops it before its body
        assert len(inner) == int(expect_inner), (attempt.name, [s.name for s in inner])

    # Log lines carry the trace: the module's "step finished" of the first attempt.
    lines = [e for e in cluster.log_events("tracea") + cluster.log_events("tracea-2")
             if e.get("event") == "step finished" and e.get("task_id") == task_id]
    assert lines and all(e["trace_id"] == trace_id for e in lines)

    texts = [text for s in receiver.all() for text in s.texts()]
    assert not [t for t in texts if CANARY in t]


def test_a_step_taken_over_after_its_module_was_killed_continues_the_same_trace(traced):
    cluster, receiver, base = traced
    faults = [{"command": "prepare", "action": "crash", "at": "during_command"}]  # SIGKILL, attempt 1
    task_id, trace_id, _ = _submit(base, "taken_over", {"password": PASSWORD, "_baton_faults": faults, "seconds": 2})
    task = cluster.wait_final(task_id, timeout=120)
    assert task.TaskStatus.name == "SUCCESS", task.TaskMessage
    killed = [p for name, p in cluster.procs.items() if name.startswith("tracea") and p.popen.poll() is not None]
    assert len(killed) == 1, "the injected crash killed one replica"
    dead_pid = killed[0].popen.pid
    wait_until(lambda: any(s.name == "step only" and s.attributes["baton.attempt"] == 2
                           for s in receiver.trace(trace_id)), 60, "the take-over's attempt")  # fmt: skip
    spans = receiver.trace(trace_id)
    by_id = {s.span_id: s for s in spans}
    submit = _one(spans, "submit taken_over")
    again = next(s for s in spans if s.name == "step only" and s.attributes["baton.attempt"] == 2)
    assert again.parent_id == submit.span_id  # the same trace, under the same task span
    assert again.resource["process.pid"] != dead_pid and again.status_code != 2
    # The killed attempt never ended, so none of its spans was exported (they are built at its
    # end): nothing in the trace misses its parent.
    assert not [s for s in spans if s.parent_id not in by_id and s.kind != "SERVER"]
    assert not [s for s in spans if s.resource.get("process.pid") == dead_pid]
    cluster.restart(killed[0].name)
    assert not [t for s in receiver.all() for t in s.texts() if CANARY in t]
