"""A step's spans written from its attempt's plain values (common/tracing/step_record.py): the
bytes baton's exporter sends decode to what the SDK's encoder builds for the same spans, and the
spans say what a step's spans say (names, parents, attributes, status), in every shape a step
takes: dropped, claimed and run, failed, retried, checked again, stopped by a shutdown."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from common.engine.changes import AttemptResult
from common.engine.document import StepMessage
from common.engine.states import Phase, ResultCode
from common.secrets.log_lines import hidden_values
from common.tracing import attempts
from common.tracing.carrier import TraceContext
from common.tracing.otlp_encoding import encode_request
from common.tracing.setup import install_provider
from common.tracing.step_record import readable

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE}-00f067aa0ba902b7-01"
LINK = f"00-{TRACE}-00000000000000a1-01"


class _Step:
    Name = "prepare"


class _Task:
    TaskType = "deploy"
    Steps = [_Step(), _Step()]


def _message(n: int, **fields) -> StepMessage:
    defaults = dict(TaskId=f"t-{n % 3}", Cursor=n % 2, Type=Phase.NORMAL, Module="m", Command="run", Timeout=1,
                    Retry=0, DispatchId=f"d-{n}", Attempt=1, Trace=TraceContext(TraceParent=PARENT, Link=LINK))
    return StepMessage(**{**defaults, **fields})


def _claimed(attempt, kind="process", result=AttemptResult(ResultCode.OK), command_result=None) -> None:
    with attempt.current():
        with attempt.child("claim"):
            pass
        attempt.claimed(_Task())
        attempt.start_command(kind)
        with attempt.in_command():
            pass
        attempt.command_ended(command_result if command_result is not None else result)
        with attempt.child("commit"):
            pass
    attempt.end(result)


def _dropped(attempt) -> None:
    with attempt.current():
        with attempt.child("claim"):
            pass
        attempt.dropped("stale dispatch")
    attempt.end()


def _stopped(attempt) -> None:  # the module's shutdown stopped the command: no commit
    with attempt.current():
        with attempt.child("claim"):
            pass
        attempt.claimed(_Task())
        attempt.start_command("async")
        attempt.command_ended(None)
    attempt.end(None)


def _another_child(attempt) -> None:
    with attempt.current(), attempt.child("claim"), attempt.child("lookup"):
        pass
    attempt.end(AttemptResult(ResultCode.OK))


FAILED = AttemptResult(ResultCode.FAILED, "could not log in with hunter2-secret")
SHAPES = {
    "ok": (_message(1), _claimed),
    "rollback of an item, no link": (_message(2, Type=Phase.ROLLBACK, Item=7, Attempt=3,
                                              Trace=TraceContext(TraceParent=PARENT)), _claimed),
    "failed": (_message(3), lambda attempt: _claimed(attempt, "thread", FAILED)),
    "failed at length": (_message(8), lambda attempt: _claimed(attempt, "thread", AttemptResult(ResultCode.FAILED,
                                                                                                "é" * 3000))),
    "checked again, verified": (_message(4), lambda attempt: _claimed(
        attempt, result=AttemptResult(ResultCode.OK, check_again=2.5, verified=("not_done", "why")))),
    "dropped": (_message(5), _dropped),
    "stopped": (_message(6), _stopped),
    "another child": (_message(7), _another_child),
}


@pytest.fixture
def records():
    kept: list = []

    class Keep:  # the span processor behind baton's exporter: takes a step's record whole
        def on_end(self, record) -> None:
            kept.append(record)

    provider = TracerProvider(resource=Resource({"service.name": "baton-m"}))
    install_provider(provider, Keep(), step_records=True)
    yield kept
    install_provider(None)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_step_s_spans_are_written_as_the_sdk_encodes_them(records, shape) -> None:
    message, run = SHAPES[shape]
    for _ in range(2):  # the second time from the groups of attributes kept
        with hidden_values(["hunter2-secret"]):
            run(attempts.begin(message, "m"))
    for record in records:
        assert ExportTraceServiceRequest.FromString(encode_request([record])) == encode_spans(readable(record))


def test_a_step_s_spans_say_what_happened(records) -> None:
    with hidden_values(["hunter2-secret"]):
        _claimed(attempts.begin(_message(1), "m"), "thread", FAILED)
    (record,) = records
    attempt, claim, command, commit = readable(record)
    assert [s.name for s in (attempt, claim, command, commit)] == ["step prepare", "claim", "command run", "commit"]
    assert attempt.parent.span_id == 0x00F067AA0BA902B7 and [link.context.span_id for link in attempt.links] == [0xA1]
    assert {s.parent.span_id for s in (claim, command, commit)} == {attempt.context.span_id}
    assert dict(attempt.attributes) == {
        "messaging.system": "rabbitmq", "messaging.operation.type": "process", "messaging.destination.name": "m",
        "baton.module": "m", "messaging.message.id": "d-1", "baton.task.id": "t-1", "baton.step": 1,
        "baton.phase": "normal", "baton.attempt": 1, "baton.command": "run", "baton.task.type": "deploy",
        "baton.step.name": "prepare", "baton.code": "FAILED"}
    assert dict(command.attributes) == {"baton.command.kind": "thread", "baton.code": "FAILED"}
    assert attempt.status.description == command.status.description == "could not log in with ***"
    assert attempt.start_time <= claim.start_time <= claim.end_time <= command.start_time <= command.end_time
    assert command.end_time <= commit.start_time <= commit.end_time <= attempt.end_time


def test_a_stopped_command_says_so_and_a_dropped_delivery_says_why(records) -> None:
    _stopped(attempts.begin(_message(6), "m"))
    _dropped(attempts.begin(_message(5), "m"))
    stopped, dropped = (readable(record) for record in records)
    assert [s.name for s in stopped] == ["step prepare", "claim", "command run"]
    assert dict(stopped[2].attributes) == {"baton.command.kind": "async", "baton.outcome": "stopped by the module's shutdown"}
    assert [s.name for s in dropped] == ["step run", "claim"] and dropped[0].attributes["baton.dropped"] == "stale dispatch"


def test_a_commit_on_another_thread_may_begin_before_the_attempt_s_block_is_left(records) -> None:
    """The command ends, and its commit begins on another thread, while the thread that claimed
    and started it is still inside the attempt's block: each block leaves its own span current."""
    import contextvars
    import threading

    from common.tracing.current_step import ids

    attempt = attempts.begin(_message(1), "m")
    committing, left = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def finish() -> None:
        with attempt.child("commit"):
            committing.set()
            left.wait(10)
            seen["commit"] = ids()
        seen["after commit"] = ids()
        attempt.end(AttemptResult(ResultCode.OK))

    with attempt.current():
        with attempt.child("claim"):
            pass
        attempt.claimed(_Task())
        attempt.start_command("async")
        attempt.command_ended(AttemptResult(ResultCode.OK))
        other = threading.Thread(target=contextvars.copy_context().run, args=(finish,))
        other.start()
        committing.wait(10)
    seen["after attempt"] = ids()
    left.set()
    other.join(10)
    (record,) = records
    spans = {s.name: s for s in readable(record)}
    trace = int(TRACE, 16)
    assert seen["commit"] == (trace, spans["commit"].context.span_id)
    assert seen["after commit"] == (trace, spans["step prepare"].context.span_id)  # as the context was copied
    assert seen["after attempt"] is None
    assert spans["commit"].end_time >= spans["commit"].start_time > 0


def test_a_message_id_s_frame_kept_by_length_writes_what_the_attribute_written_in_full_would():
    from common.tracing import step_record

    for size in (0, 1, 36, 112, 113, 127, 128, 4000, 4096, 20000):  # where a varint grows a byte
        for letter in ("a", "é"):
            text = (letter * size).encode("utf-8")
            frame = step_record._text_frame({}, step_record._MESSAGE_ID_KEY, len(text))
            assert frame + text == step_record._text(step_record._MESSAGE_ID_KEY, text.decode("utf-8"))
