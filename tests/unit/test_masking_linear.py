"""URL-password masking runs on untrusted text in every log line: it must be linear in its input.

The regex it replaces, kept here as the reference, gave the same answers in quadratic time (a run
of letters made it restart at every letter: 1 KB took 6 ms, 4 KB 91 ms, 1 MB hours).
"""

from __future__ import annotations

import re
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from common.logging import MASK, mask_secrets, mask_url_passwords

REFERENCE = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://[^:/@\s]+:)[^@\s]+@", re.IGNORECASE)


def reference(text: str) -> str:
    return REFERENCE.sub(lambda m: m.group("scheme") + MASK + "@", text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aZ9+.-:/@ \t_x", max_size=60))
def test_same_answers_as_the_regex_on_any_text(text):
    assert mask_url_passwords(text) == reference(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["amqp", "://", "u", ":", "pw", "@", " ", "1", "-", "h/v", "x@y"]), max_size=25))
def test_same_answers_on_url_like_pieces(pieces):
    text = "".join(pieces)
    assert mask_url_passwords(text) == reference(text)


def test_urls_are_masked():
    text = "connect amqp://guest:hunter2@rabbit:5672/%2F and mysql://root:pw@db, not http://host/x@y"
    assert mask_url_passwords(text) == (
        "connect amqp://guest:***@rabbit:5672/%2F and mysql://root:***@db, not http://host/x@y"
    )


HOSTILE = {  # each of these made some part of the old pattern rescan the rest of the input
    "letters": "a",
    "digits": "1",
    "schemes without a user": "a://",
    "users without a password end": "a://u:p",
    "scheme runs": "ab+.-",
}


def _slowest_ratio(unit: str) -> float:
    """Time of 1 MB over time of 50 KB of the same pattern (best of five each: noise only adds)."""

    def best(size: int) -> float:
        text = (unit * (size // len(unit) + 1))[:size]
        times = []
        for _ in range(5):
            start = time.perf_counter()
            mask_secrets({"value": text})
            times.append(time.perf_counter() - start)
        return min(times)

    return best(1_000_000) / max(best(50_000), 1e-6)


def test_masking_is_linear_on_a_megabyte_of_hostile_text():
    # Algorithmic, not a speed limit: 20 times the input may take up to ~20 times as long, and
    # we allow 100 (noise on a shared machine); a quadratic pass would take 400 times as long.
    for name, unit in HOSTILE.items():
        ratio = _slowest_ratio(unit)
        assert ratio < 100, f"{name}: 1 MB took {ratio:.0f}x the time of 50 KB"


def test_standard_library_log_records_are_masked_too(caplog):
    """uvicorn, pika and pymongo log through the standard library, not structlog."""
    import logging

    from common.logging import configure_logging, hidden_values

    configure_logging("json", "info")
    with caplog.at_level(logging.INFO), hidden_values(["hunter2-secret"]):
        logging.getLogger("some.library").warning("connecting to %s as %s", "amqp://u:pw@h/v", "hunter2-secret")
    assert caplog.records[-1].getMessage() == "connecting to amqp://u:***@h/v as ***"


def test_standard_library_lines_are_printed_as_baton_s_own(capsys):
    """A library's line in a JSON log is a JSON object too: level, time, the logger's name, the
    step's context, masked; not a plain-text line of another format in the same stream."""
    import json
    import logging

    import structlog

    from common.logging import configure_logging, hidden_values

    configure_logging("json", "info")
    with structlog.contextvars.bound_contextvars(task_id="t-1"), hidden_values(["hunter2-secret"]):
        logging.getLogger("some.library").warning("connecting to %s as %s", "amqp://u:pw@h/v", "hunter2-secret")
        logging.getLogger("pika.connection").info("a chatty library's info line")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert lines == [{
        "event": "connecting to amqp://u:***@h/v as ***", "logger": "some.library", "task_id": "t-1",
        "level": "warning", "timestamp": lines[0]["timestamp"],
    }]  # fmt: skip
