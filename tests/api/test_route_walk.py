"""Every route of the OpenAPI document, walked: the token is judged before anything else (401
before any 422), and every query, header and path parameter fed other scripts' digits and
control characters answers 4xx, never 5xx. Driven by the document, so a new route or parameter
is walked too."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import jsonschema_rs
import pytest

from tests.api.support import OPERATOR, Api, auth

# '²' and '٣' are digits to str.isdigit() (and '٣' to int()), '１' a fullwidth one.
OTHER_DIGITS = ["²", "٣", "１", "².1", "٣.1", "1²"]
CONTROL = ["\x00", "a\x00b", "\x1b[31m", "a\nb", "\r\n", "\x7f", "\x85"]
BAD_VALUES = OTHER_DIGITS + CONTROL
METHODS = ("get", "post", "put", "patch", "delete")


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    paths = document["paths"]
    found = [(path, method, op) for path, item in paths.items() for method, op in item.items() if method in METHODS]
    assert len(found) >= 25  # the walk reaches the whole API
    return found


def url(path: str, fill: str = "x") -> str:
    return path.replace("{", "\x00").split("\x00")[0] + "".join(
        quote(fill, safe="") + part.split("}", 1)[1] for part in path.split("{")[1:]
    )


def call(api: Api, method: str, target: str, *, params: Any = None, headers: Any = None, body: Any = None):
    return api.client.request(method.upper(), target, params=params, headers=headers, content=body)


def needs_token(op: dict[str, Any]) -> bool:
    return "401" in op["responses"]


def test_the_walks_follow_the_document_the_app_serves(api: Api, published: dict[str, Any]) -> None:
    # The walks read the module's `published` document instead of asking each test's app.
    assert api.client.get("/api/v1/openapi.json").json() == published


def test_without_a_token_every_guarded_route_answers_401_before_any_422(api: Api, published: dict[str, Any]) -> None:
    walked = 0
    for path, method, op in operations(published):
        if not needs_token(op):
            continue
        params = {"access_token": "x", "stauts": "4"}
        for param in op.get("parameters", []):
            if param["in"] == "query":
                params[param["name"]] = "\x00not valid"
        attempts = [
            call(api, method, url(path), params=params),
            call(api, method, url(path, "\x00"), params=params, body=b"{not json", headers={"Content-Type": "application/json"}),
            call(api, method, url(path), headers={"Authorization": "Bearer wrong", "Content-Type": "application/json"},
                 params=params, body=b"[1, 2"),
            call(api, method, url(path), headers={"Authorization": "Basic x"}, params=params),
        ]  # fmt: skip
        for response in attempts:
            assert response.status_code == 401, (method, path, response.status_code, response.text)
            assert response.headers["WWW-Authenticate"] == "Bearer"
        walked += 1
    assert walked >= 20


def test_a_read_token_is_told_403_before_any_422_too(api: Api, published: dict[str, Any]) -> None:
    from tests.api.support import READER

    for path, method, op in operations(published):
        if "403" not in op["responses"] or method == "get":
            continue
        response = call(api, method, url(path), params={"stauts": "4"}, headers={**auth(READER), "Content-Type": "application/json"},
                        body=b"{not json")  # fmt: skip
        assert response.status_code == 403, (method, path, response.text)


def published_accepts(document: dict[str, Any], schema: dict[str, Any], value: str) -> bool:
    """Whether the document allows `value` (query and header values are strings) for a parameter:
    what it refuses must be answered 4xx; what it allows may be taken."""
    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(document["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]])
            return {k: inline(v) for k, v in node.items()}
        return [inline(v) for v in node] if isinstance(node, list) else node

    return bool(jsonschema_rs.validator_for(inline(schema), validate_formats=True).is_valid(value))


@pytest.mark.parametrize("value", BAD_VALUES)
def test_every_query_and_header_parameter_answers_4xx_to_other_digits_and_control_characters(
        api: Api, published: dict[str, Any], value: str) -> None:  # fmt: skip
    task_id = api.create("free_form")["task_id"]
    document = published
    checked = 0
    for path, method, op in operations(published):
        for param in op.get("parameters", []):
            where = param["in"]
            if where not in ("query", "header"):
                continue
            target = url(path, task_id) if path.endswith("/events") else url(path)
            if where == "query":
                response = call(api, method, target, params={param["name"]: value}, headers=auth(OPERATOR))
            else:  # as raw bytes: UTF-8 for other scripts, as a client would send them
                response = call(api, method, target, params={"timeout": "0.2"} if path.endswith("/events") else None,
                                headers={**auth(OPERATOR), param["name"]: value.encode()})  # fmt: skip
            assert response.status_code < 500, (method, path, param["name"], repr(value), response.text)
            allowed = published_accepts(document, param.get("schema", {}), value)
            assert not (allowed and value in CONTROL), (path, param["name"])  # no name, id or number takes one
            if not allowed:
                assert 400 <= response.status_code < 500, (method, path, param["name"], repr(value), response.text[:300])
            checked += 1
    assert checked >= 15


def test_the_last_event_id_header_takes_ascii_digits_only(api: Api) -> None:
    task_id = api.create("free_form")["task_id"]
    target = f"/api/v1/tasks/{task_id}/events"
    for raw in (b"\xb2.1", "².1".encode(), "٣.1".encode(), "１.1".encode(), b"1.1\x1b", b"1", b"1.x"):
        response = api.client.get(target, params={"timeout": 0.2}, headers={**auth(), "Last-Event-ID": raw})
        assert response.status_code == 422, (raw, response.text)
        assert response.json()["error"]["fields"][0]["path"] == 'header["last-event-id"]'
    assert api.client.get(target, params={"timeout": 0.2}, headers={**auth(), "Last-Event-ID": "1.1"}).status_code == 200


@pytest.mark.parametrize("value", BAD_VALUES)
def test_every_path_parameter_answers_4xx_to_other_digits_and_control_characters(api: Api, published: dict[str, Any],
                                                                                 value: str) -> None:  # fmt: skip
    for path, method, op in operations(published):
        if "{" not in path:
            continue
        response = call(api, method, url(path, value), headers={**auth(OPERATOR), "Content-Type": "application/json"},
                        body=b'{"reason": "walk"}')  # fmt: skip
        assert 400 <= response.status_code < 500, (method, path, repr(value), response.text)
        assert value not in response.text  # the id asked for is not echoed


@pytest.mark.parametrize("value", ["1_0", " 5", "+5", "5 ", "0x10", "٥", "٣", "3.5", "3.", ".0"])
def test_numbers_in_a_query_are_plain_ascii(api: Api, value: str) -> None:
    for path in ("/api/v1/tasks", "/api/v1/alarms", "/api/v1/schedules", "/api/v1/locks"):
        response = api.get(path, limit=value)
        assert response.status_code == 422, (path, value, response.text)
        assert response.json()["error"]["fields"][0]["path"] == "query.limit"


def test_a_whole_number_with_a_zero_fraction_is_that_number(api: Api) -> None:
    """The published schema says integer, which 3.0 is: a generated client may write it so."""
    for path in ("/api/v1/tasks", "/api/v1/alarms", "/api/v1/schedules", "/api/v1/locks"):
        response = api.get(path, limit="3.0")
        assert response.status_code == 200, (path, response.text)
