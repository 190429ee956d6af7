"""A step's log line written the short way is the line structlog's own way writes, byte for byte:
the same keys in the same order, the same values, the same JSON text, the same timestamp text,
the same masking. Users parse these lines."""

from __future__ import annotations

import datetime
import json
import math

import pytest
import structlog
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
