"""URL-password masking runs on untrusted text in every log line: it must be linear in its input.

The regex it replaces, kept here as the reference, gave the same answers in quadratic time (a run
of letters made it restart at every letter: 1 KB took 6 ms, 4 KB 91 ms, 1 MB hours).
"""

from __future__ import annotations

import re
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from common.secrets.scrubber import MASK
from common.secrets.documents import mask_secrets
from common.secrets.urls import mask_url_passwords

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
    """CPU time of 1 MB over CPU time of 50 KB of the same pattern (best of five each: noise only
    adds). The thread's CPU time, not the wall clock: on a loaded machine the wall clock counts
    the time the thread waited for a core, which made a linear pass look quadratic."""

    def best(size: int) -> float:
        text = (unit * (size // len(unit) + 1))[:size]
        times = []
        for _ in range(5):
            start = time.thread_time()
            mask_secrets({"value": text})
            times.append(time.thread_time() - start)
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

    from common.logging import configure_logging
    from common.secrets.log_lines import hidden_values

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

    from common.logging import configure_logging
    from common.secrets.log_lines import hidden_values

    configure_logging("json", "info")
    with structlog.contextvars.bound_contextvars(task_id="t-1"), hidden_values(["hunter2-secret"]):
        logging.getLogger("some.library").warning("connecting to %s as %s", "amqp://u:pw@h/v", "hunter2-secret")
        logging.getLogger("pika.connection").info("a chatty library's info line")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert lines == [{
        "event": "connecting to amqp://u:***@h/v as ***", "logger": "some.library", "task_id": "t-1",
        "level": "warning", "timestamp": lines[0]["timestamp"],
    }]  # fmt: skip


# --- known secret values: the work of masking grows with the task, not with task x secrets -----


def _operations(action) -> int:
    """Python and C calls made by `action` (the profiler's events): work counted, not timed."""
    import sys

    count = 0

    def profile(_frame, _event, _arg):
        nonlocal count
        count += 1

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return count


def _task_with_secrets(size: int):
    """`size` accounts with a password each (the user names stay, and are scrubbed of every
    password), and a message quoting each password (the substring case)."""
    from common.engine.core.entries import Timing, create_task
    from tests.support.builders import counter_ids, make_step

    passwords = [f"pw-{i:06d}-canary" for i in range(size)]
    accounts = [{"user": f"user-{i:06d}", "password": pw} for i, pw in enumerate(passwords)]
    task = create_task(task_type="t", steps=[make_step("a")], parameters={"accounts": accounts},
                       timing=Timing(1.0), ids=counter_ids())  # fmt: skip
    task.TaskMessage = "could not log in with " + ", ".join(passwords)
    return task


def _growth(work) -> float:
    """How much more work twice the secrets cost: about 2 if linear, about 4 if quadratic."""
    return _operations(lambda: work(800)) / _operations(lambda: work(400))


def test_showing_a_task_costs_work_linear_in_its_secret_values():
    from common.secrets.task_views import masked_task_view

    tasks = {size: _task_with_secrets(size) for size in (400, 800)}
    view = masked_task_view(tasks[400])
    assert "canary" not in str(view) and view["Parameters"]["accounts"][0]["user"] == "user-000000"
    assert _growth(lambda size: masked_task_view(tasks[size])) < 2.6


def test_a_log_line_of_a_task_with_many_secrets_costs_work_linear_in_them():
    from common.secrets.log_lines import mask_log_event as _mask_processor, hidden_values
    from common.secrets.values import secret_values

    def log_line(size: int) -> None:
        task = _task_with_secrets(size)
        with hidden_values(secret_values(task)):
            event = _mask_processor(None, "info", {"event": "failed", "error": task.TaskMessage,
                                                   "users": [a["user"] for a in task.Parameters["accounts"]]})  # fmt: skip
        assert "canary" not in str(event)

    assert _growth(log_line) < 2.6


def test_overlapping_secrets_leave_no_part_of_either():
    from common.secrets.scrubber import Scrubber

    # "bcdef" is found first by no order of replacement that masks "abcd" whole: both go.
    assert Scrubber(["abcd", "bcdefg"]).text("xabcdefgy") == f"x{MASK}y"
    assert Scrubber(["abcd", "cdef"]).text("abcdcdef") == f"{MASK}{MASK}"  # touching: two masks
    assert Scrubber(["pass", "password-1"]).text("a password-1 and a pass") == f"a {MASK} and a {MASK}"
    assert Scrubber(["abcd"]).text("abcd") == MASK and Scrubber([]).text("abcd") == "abcd"


@settings(max_examples=500, deadline=None)
@given(st.text("abc", max_size=24), st.lists(st.text("abc", min_size=1, max_size=5), max_size=20))
def test_every_character_of_every_occurrence_is_masked(text, secrets):
    """The same answer as the obvious quadratic way: find every occurrence of every secret,
    merge those that overlap, mask each merged stretch once."""
    from common.secrets.scrubber import Scrubber

    stretches: list[list[int]] = []
    for start, end in sorted((i, i + len(s)) for s in set(secrets) for i in range(len(text)) if text.startswith(s, i)):
        if stretches and start < stretches[-1][1]:
            stretches[-1][1] = max(stretches[-1][1], end)
        else:
            stretches.append([start, end])
    expected, done = "", 0
    for start, end in stretches:
        expected, done = expected + text[done:start] + MASK, end
    assert Scrubber(secrets).text(text) == expected + text[done:]
    many = secrets + [f"zz{i}" for i in range(10)]  # past the few searched for directly
    assert Scrubber(many).text(text) == expected + text[done:]
