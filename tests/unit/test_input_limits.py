"""common.input_limits: the one edge check of anything stored, as a pure function."""

from __future__ import annotations

from common.input_limits import InputLimits, json_problems
from common.runtime.runner import MAX_MESSAGE, bounded_message

LIMITS = InputLimits(max_depth=4, max_items=10, max_bytes=2000, max_string=50)


def nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"k": value}
    return value


def test_depth_is_counted_in_containers_and_the_walk_never_recurses():
    assert json_problems(nested(4), LIMITS, "p") == []
    assert json_problems(nested(5), LIMITS, "p") == [("p.k.k.k.k", "nested deeper than 4 levels")]
    assert json_problems(nested(200_000), LIMITS, "p")[0][1] == "nested deeper than 4 levels"  # no RecursionError


def test_problems_name_the_path_and_never_hold_the_value():
    problems = json_problems({"a\ud800b": 1, "s": "x\udfff", "n": 2**64}, InputLimits(), "parameters")
    assert ("parameters", "a key contains a lone surrogate (not valid Unicode)") in problems
    assert ("parameters.s", "contains a lone surrogate (not valid Unicode)") in problems
    assert ("parameters.n", "integer outside the signed 64-bit range") in problems
    for path, message in problems:
        (path + message).encode("utf-8")


def test_a_bad_key_deeper_down_is_shown_escaped_in_the_path():
    problems = json_problems({"a\ud800": {"$x": 1}}, InputLimits(), "p")
    assert problems == [("p", "a key contains a lone surrogate (not valid Unicode)")]
    problems = json_problems({"ok key": {"$x": 1}}, InputLimits(), "p")
    assert problems == [('p["ok key"]', 'a key starts with "$" (an operator to MongoDB)')]


def test_counts_and_sizes_stop_the_walk_early():
    assert json_problems(list(range(11)), LIMITS, "p") == [("p", "more than 10 keys and items in all")]
    assert json_problems(["y" * 49] * 9, LIMITS, "p") == []
    assert json_problems(["y" * 49] * 10, InputLimits(max_bytes=400), "p")[-1] == ("p", "larger than 400 bytes of JSON")


def test_command_failure_messages_are_bounded_and_always_encodable():
    assert len(bounded_message("x" * 1_000_000)) == MAX_MESSAGE
    assert bounded_message("bytes \udcff decoded badly") == "bytes \\udcff decoded badly"
