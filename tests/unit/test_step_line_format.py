"""A step's log line written the short way is the line structlog's own way writes, byte for byte:
the same keys in the same order, the same values, the same JSON text, the same timestamp text,
the same masking. Users parse these lines."""

from __future__ import annotations

import datetime
import json
import math

import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.processors import _json_fallback_handler

from common import log_output
from common.logging import HotPathLogger, bound_fields, configure_logging
from common.secrets.documents import mask_secrets, mask_secrets_in_place
from common.secrets.log_lines import hidden_values, masked


@pytest.fixture
def json_lines():
    configure_logging("json", "debug")
    yield
    configure_logging()


def _without_timestamp(line: str) -> dict:
    event = json.loads(line)
    assert event.pop("timestamp").endswith("Z")
    return event


class Shown:
    def __repr__(self) -> str:
        return "Shown()"


def test_the_short_way_writes_structlog_s_line(json_lines, capsys):
    short, usual = HotPathLogger("step"), structlog.get_logger("step")
    assert short.info.__name__ == "line"  # the short way is the one taken here
    kinds = dict(ok=True, code="OK", error="refused by postgres://admin:hunter22@db/x with a-secret-value",
                 seconds=0.0012, none=None, text="é\n\"", password="p", nested={"token": "t", "n": [1, "x://u:p@h"]},
                 shown=Shown(), infinite=math.inf)  # fmt: skip
    with bound_fields(task_id="t-1", step=2, item=None, phase="normal", attempt=1), hidden_values(["a-secret-value"]):
        for log in (short, usual):
            log.info("step finished", **kinds)
            log.warning("retry %s of %s", 2, 3)
            log.error("named %(what)s", {"what": "x"})
            log.debug("shown at debug")
            try:
                raise ValueError("with a-secret-value inside")
            except ValueError:
                log.error("failed", exc_info=True)
    text = capsys.readouterr().err
    lines = text.splitlines()
    assert len(lines) == 10
    first, second = lines[:5], lines[5:]
    for mine, theirs in zip(first, second):
        assert list(_without_timestamp(mine).items()) == list(_without_timestamp(theirs).items())
    assert "hunter22" not in text and "a-secret-value" not in text


def test_a_level_below_the_configured_one_writes_nothing_the_short_way(capsys):
    try:
        configure_logging("json", "warning")
        log = HotPathLogger("step")
        log.debug("no")
        log.info("no")
        log.warning("yes")
        log.exception("also")  # not a short way: the bound logger's own
    finally:
        configure_logging()
    assert [json.loads(line)["event"] for line in capsys.readouterr().err.splitlines()] == ["yes", "also"]


@pytest.mark.parametrize("event", [
    {"event": "x", "n": 1, "f": 0.1 + 0.2, "big": 10**30, "nan": math.nan, "inf": -math.inf, "none": None, "t": True},
    {"text": "é ü \u2028 \x00 \"quoted\" back\\slash /slash", "list": [1, [2, {"a": ()}]], "tuple": (1, "2")},
    {"obj": Shown(), "set": {1}, "bytes": b"x", 3: "int key", 1.5: "float key", None: "none key", False: "bool key"},
])  # fmt: skip
def test_a_line_s_json_is_json_dumps_text(event):
    assert log_output.JsonLine()(None, "info", event) == json.dumps(event, default=_json_fallback_handler)


@pytest.mark.parametrize("nanoseconds", [0, 999, 1_000, 1_700_000_000_000_000_000, 1_700_000_000_123_456_789,
                                         1_700_000_059_999_999_999, 253_402_300_799_000_001_000])  # fmt: skip
def test_a_line_s_timestamp_is_datetime_s_text(monkeypatch, nanoseconds):
    monkeypatch.setattr(log_output, "_ns", lambda: nanoseconds)
    monkeypatch.setattr(log_output, "_second", (-1, ""))
    expected = datetime.datetime.fromtimestamp(nanoseconds // 1000 / 1e6, datetime.timezone.utc)
    expected = expected.replace(microsecond=nanoseconds // 1000 % 1_000_000)
    assert log_output.add_timestamp(None, "info", {})["timestamp"] == expected.isoformat().replace("+00:00", "Z")
    assert log_output.add_timestamp(None, "info", {})["timestamp"] == expected.isoformat().replace("+00:00", "Z")


def test_a_line_masked_in_place_is_masked_as_a_copy_would_be():
    nested = {"password": "p", "url": "http://u:secret@h"}
    event = {"event": "x", "api_key": "k", "url": "postgres://u:pw@h/db", "plain": "no url", "n": 3, "nested": nested,
             "items": ["a", "ftp://u:pw@h"], "pair": ("a", "s://u:pw@h"), "obj": Shown(), 7: "int key"}  # fmt: skip
    expected = mask_secrets(event)
    masked_here = mask_secrets_in_place(dict(event))
    assert list(masked_here.items()) == list(expected.items())
    assert nested == {"password": "p", "url": "http://u:secret@h"}  # the values it holds are not changed in place


def test_masked_leaves_its_value_as_it_was():
    value = {"password": "p", "url": "http://u:secret@h", "text": "a-secret-value"}
    with hidden_values(["a-secret-value"]):
        shown = masked(value)
    assert shown == {"password": "***", "url": "http://u:***@h", "text": "***"}
    assert value == {"password": "p", "url": "http://u:secret@h", "text": "a-secret-value"}


# What a client may send that ends up in a step's line: text with line breaks, control and
# invisible characters, lone surrogates, URLs with passwords, keys named like secrets or like the
# line's own fields, at any depth.
_HOSTILE_TEXT = st.one_of(
    st.text(max_size=20), st.sampled_from(["a\nb", "\r\n{\"level\": \"critical\"}", "\x00\x1b[31m", "\u2028\u2029\u202e",
                                          "\ud800", "mysql://app:pw-in-url@db/x", "x" * 5000, "a-secret-value"]),
)  # fmt: skip
_HOSTILE_KEYS = st.sampled_from(["password", "PASSWORD", "api_key", "token", "note", "event_", "levels", "url"])
_HOSTILE_VALUES = st.recursive(st.none() | st.integers() | st.floats() | _HOSTILE_TEXT,
                               lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_HOSTILE_KEYS, inner, max_size=3),
                               max_leaves=8)  # fmt: skip
_FIELDS = st.dictionaries(st.sampled_from(["level", "timestamp", "task_id", "logger", "exception", "password", "note", "error"]),
                          _HOSTILE_VALUES, max_size=4)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=_FIELDS, event=_HOSTILE_TEXT)
def test_hostile_values_make_the_same_single_line_both_ways_and_show_no_secret(json_lines, capsys, fields, event):
    short, usual = HotPathLogger("step"), structlog.get_logger("step")
    capsys.readouterr()
    with bound_fields(task_id="t-1", step=2), hidden_values(["a-secret-value"]):
        for log in (short, usual):
            log.info(event, **fields)
    text = capsys.readouterr().err
    mine, theirs = text.splitlines()  # one line each, whatever the values hold
    assert mine.encode("ascii") and _without_timestamp(mine) == _without_timestamp(theirs)
    shown = json.loads(mine)
    assert shown["level"] == "info" and shown["event"] == masked(event).replace("a-secret-value", "***")
    assert "pw-in-url" not in text and "a-secret-value" not in text
    for key in ("password", "PASSWORD", "api_key", "token"):
        assert f'"{key}": "***"' in mine or f'"{key}": ' not in mine
