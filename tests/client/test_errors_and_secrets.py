"""The exceptions a call raises say what happened, with the server's words; the token appears in
no repr, str, log line or error (baton_client/errors.py, auth.py, call.py)."""

from __future__ import annotations

import json
import logging
import pickle

import pytest

from baton_client import (
    BatonClient, Conflict, Forbidden, InvalidInput, NotFound, RetryPolicy, ServerError, Token, Unauthorized,
    Unavailable,
)  # fmt: skip
from baton_client.call import Call, segment
from baton_client.errors import FieldError, error_for_answer

SECRET = "tok-client-secret-0123456789"


def body(code: str, message: str, *fields: tuple[str, str]) -> bytes:
    return json.dumps({"error": {"code": code, "message": message,
                                 "fields": [{"path": p, "message": m} for p, m in fields]}}).encode()  # fmt: skip


@pytest.mark.parametrize(("status", "kind"), [
    (400, InvalidInput), (401, Unauthorized), (403, Forbidden), (404, NotFound), (409, Conflict), (413, InvalidInput),
    (422, InvalidInput), (503, Unavailable), (500, ServerError), (405, ServerError),
])  # fmt: skip
def test_each_status_is_its_own_exception_with_the_servers_code_message_and_fields(status, kind) -> None:
    error = error_for_answer(status, body("some_code", "what went wrong", ("parameters.cpu", "must be at most 64")))
    assert type(error) is kind
    assert (error.status, error.code, error.message) == (status, "some_code", "what went wrong")
    assert error.fields == (FieldError("parameters.cpu", "must be at most 64"),)
    assert str(error) == f"{status} some_code: what went wrong (parameters.cpu: must be at most 64)"


def test_an_answer_not_in_the_apis_shape_keeps_its_first_words() -> None:
    error = error_for_answer(502, b"<html>Bad Gateway</html>" + b"x" * 500)
    assert isinstance(error, ServerError) and error.message.startswith("<html>Bad Gateway") and len(error.message) <= 200


def test_a_query_leaves_out_what_is_none_repeats_a_list_and_writes_a_bool_as_json_does() -> None:
    call = Call("GET", "/x", None, params={"a": None, "label": ["k=v", "j=w"], "stale": True, "limit": 5})
    assert call.query() == (("label", "k=v"), ("label", "j=w"), ("stale", "true"), ("limit", "5"))


def test_an_id_is_one_path_segment_whatever_it_holds() -> None:
    assert segment("a/../b?c=1") == "a%2F..%2Fb%3Fc%3D1"


def test_a_token_never_shows(caplog) -> None:
    token = Token(SECRET)
    assert SECRET not in repr(token) and SECRET not in str(token) and SECRET not in f"{token!r} {token}"
    with pytest.raises(TypeError):
        pickle.dumps(token)
    client = BatonClient("http://127.0.0.1:9", SECRET, retry=RetryPolicy(attempts=2, initial=0, max_delay=0))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(Unavailable) as unreachable:
        client.get_task("t1")  # nothing listens on port 9: every attempt fails, and is logged
    client.close()
    shown = [repr(client), repr(client._http.auth), str(unreachable.value), repr(unreachable.value), caplog.text]
    assert "attempt 1 of 2" in caplog.text
    assert not [text for text in shown if SECRET in text]


@pytest.mark.parametrize("bad", ["", "   ", "with space-0123456789", "tab\t0123456789"])
def test_a_malformed_token_is_refused_without_being_repeated(bad) -> None:
    with pytest.raises(ValueError) as refused:
        Token(bad)
    assert bad.strip() == "" or bad not in str(refused.value)


def test_a_password_in_the_url_is_not_shown_either() -> None:
    with BatonClient("https://bob:hunter2@baton.example:8443/", SECRET) as client:
        assert repr(client) == "BatonClient('https://baton.example:8443')" and "hunter2" not in client.base_url
    with pytest.raises(ValueError) as refused:
        BatonClient("ftp://bob:hunter2@baton.example")
    assert "hunter2" not in str(refused.value)


@pytest.mark.parametrize("task_id", [".", ".."])
def test_a_dot_id_stays_the_id_and_never_names_another_route(task_id: str) -> None:
    # Sent as written, `.` and `..` are dot segments: httpx removes them, so `get_task(".")` asked
    # for the task list (and failed reading it as a task) and `cancel("..")` posted elsewhere.
    import httpx

    seen: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path)
        return httpx.Response(404, content=body("not_found", "no such task"))

    client = BatonClient("http://baton.test", SECRET, retry=RetryPolicy(attempts=1),
                         http={"transport": httpx.MockTransport(answer)})  # fmt: skip
    for call in (lambda: client.get_task(task_id), lambda: client.cancel(task_id, "why"),
                 lambda: client.act("t1", task_id, "approve", "ok"), lambda: client.list_items(task_id, task_id)):
        with pytest.raises(NotFound):
            call()
    client.close()
    assert [path.split(b"/")[4] for path in seen] == [task_id.replace(".", "%2E").encode()] * 2 + [b"t1"] + [
        task_id.replace(".", "%2E").encode()]
    assert seen[2].split(b"/")[6] == task_id.replace(".", "%2E").encode()


def test_an_empty_id_is_refused_before_anything_is_sent() -> None:
    client = BatonClient("http://127.0.0.1:9", SECRET, retry=RetryPolicy(attempts=1))
    with pytest.raises(ValueError, match="empty"):
        client.get_task("")  # it would name the task list
    client.close()
