"""What any JSON a client (or a command) hands baton must be, before anything stores it.

One check for every value that ends up in a task document: parameters, labels, a user id, an
idempotency key, an operator's reason, a command's output. The same for every task type and every
store, so a document one store accepts is one every store, reader, sweeper and module can handle:

- depth at most `max_depth` levels (MongoDB refuses more than 100; the JSON readers stop at 200);
- at most `max_items` object keys and list items in all below the top level (whose keys, the
  fields' names, are bounded on their own), `max_bytes` of JSON, strings of at most `max_string`
  characters;
- text is valid Unicode: no lone surrogate ("\\ud800" cannot be encoded as UTF-8 at all);
- keys are plain: no NUL, not starting with "$", no "." (MongoDB would read them as operators or
  paths), at most 256 characters;
- integers fit in signed 64 bits (BSON and SQLite hold no more) and floats are finite (JSON has no
  NaN or Infinity).

Problems are (path, message) pairs naming where and what, never the offending value: a value that
cannot be encoded would break the very answer that reports it, and a value may be a secret.
The walk is iterative (an explicit stack): a value nested 100,000 levels deep is refused, not
a RecursionError.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from common.errors import InvalidInput
from common.spec.problems import format_path

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_KEY_LENGTH = 256
MAX_PROBLEMS = 20  # enough to fix a request by; a hostile one could otherwise make thousands


@dataclass(frozen=True)
class InputLimits:
    max_depth: int = 32
    max_items: int = 10_000
    max_bytes: int = 256 * 1024
    max_string: int = 64 * 1024


Problem = tuple[str, str]

# C0 and C1 control characters (NUL, ESC, newlines...): nothing a name, an id, a key or a label
# means, and what a log line or a terminal showing one would choke on. So are the invisible
# format characters: zero-width ones (U+200B-U+200D, U+2060-U+2064, U+FEFF) make two names that
# look the same differ, and bidi controls (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069)
# make a line read in another order than it is written. One pattern for the API's schema (JSON
# Schema, pydantic and Python alike read it) and the check below.
INVISIBLE = r"\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
NO_CONTROL_PATTERN = rf"^[^\x00-\x1f\x7f-\x9f{INVISIBLE}]*$"
_CONTROL = re.compile(rf"[\x00-\x1f\x7f-\x9f{INVISIBLE}]")
CONTROL_PROBLEM = "contains a control character (NUL, ESC, a newline...) or an invisible one (zero-width, bidi)"
# Free text an operator writes (a reason): a tab and a newline are text there (a reason may be a
# commit message); every other control character and every invisible one is refused.
FREE_TEXT_PATTERN = rf"^[^\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE}]*$"
_FREE_TEXT_BAD = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{INVISIBLE}]")
FREE_TEXT_PROBLEM = "contains a control character (NUL, ESC...) or an invisible one (zero-width, bidi)"


def json_problems(value: Any, limits: InputLimits, root: str) -> list[Problem]:
    """Every way `value` breaks the limits (at most MAX_PROBLEMS), paths starting at `root`."""
    problems: list[Problem] = []
    items = size = 0
    # (value, path, depth); the path is a tuple so it is only formatted when a problem is found.
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(value, (root,), 0)]
    while stack and len(problems) < MAX_PROBLEMS:
        node, path, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth >= limits.max_depth:
                problems.append((_where(path), f"nested deeper than {limits.max_depth} levels"))
                continue
            # The top level's own keys are the names of the fields (`hosts` in parameters), not
            # items: counted, a list of exactly max_items items under its name would be refused.
            if depth == 0:
                within = len(node) <= limits.max_items
            else:
                items += len(node)
                within = items <= limits.max_items
            if not within:
                problems.append((_where(path), f"more than {limits.max_items} keys and items in all"))
                break
            if isinstance(node, dict):
                for key, item in node.items():
                    problem = key_problem(key)
                    if problem:
                        problems.append((_where(path), problem))
                    else:
                        size += len(key) + 4
                        stack.append((item, (*path, key), depth + 1))
            else:
                size += len(node) + 2
                stack.extend((item, (*path, i), depth + 1) for i, item in enumerate(node))
        else:
            problem = scalar_problem(node, limits)
            if problem:
                problems.append((_where(path), problem))
            size += len(node) + 2 if isinstance(node, str) else 8
        if size > limits.max_bytes:
            problems.append((root, f"larger than {limits.max_bytes} bytes of JSON"))
            break
    return problems


def text_problems(text: str | None, root: str, max_length: int) -> list[Problem]:
    """A single free-text field (a reason, a user id, a key): valid Unicode, bounded."""
    if text is None:
        return []
    if len(text) > max_length:
        return [(root, f"longer than {max_length} characters")]
    problem = _text_problem(text)
    return [(root, problem)] if problem else []


def key_problem(key: Any) -> str | None:
    if not isinstance(key, str):
        return "keys must be strings"
    if len(key) > MAX_KEY_LENGTH:
        return f"a key is longer than {MAX_KEY_LENGTH} characters"
    if "\x00" in key:
        return "a key contains NUL"
    if key.startswith("$"):
        return 'a key starts with "$" (an operator to MongoDB)'
    if "." in key:
        return 'a key contains "." (a path to MongoDB)'
    problem = _text_problem(key)
    return f"a key {problem}" if problem else None


def scalar_problem(value: Any, limits: InputLimits) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return None if INT64_MIN <= value <= INT64_MAX else "integer outside the signed 64-bit range"
    if isinstance(value, float):
        return None if math.isfinite(value) else "number is not finite (NaN and Infinity are not JSON)"
    if isinstance(value, str):
        if len(value) > limits.max_string:
            return f"string longer than {limits.max_string} characters"
        return _text_problem(value)
    return f"{type(value).__name__} is not a JSON value"


def _text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode)"
    return None


def _where(path: tuple[str | int, ...]) -> str:
    """The path as text that can always be encoded (a bad key is shown escaped) and is short."""
    text = format_path(tuple(_printable(part) for part in path))
    return text if len(text) <= 200 else text[:199] + "…"


def _printable(part: str | int) -> str | int:
    return part if isinstance(part, int) else printable(part[:64])


def printable(text: str) -> str:
    """`text` with anything UTF-8 cannot encode escaped: safe in any answer or log line."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def identifier_problems(value: str | dict[str, str] | None, root: str) -> list[Problem]:
    """A name, id or key (or a mapping of labels, keys and values): no control character."""
    if isinstance(value, str):
        return [(root, CONTROL_PROBLEM)] if _CONTROL.search(value) else []
    problems: list[Problem] = []
    for key, item in (value or {}).items():
        if isinstance(key, str) and _CONTROL.search(key):
            problems.append((root, f"a key {CONTROL_PROBLEM}"))
        elif isinstance(item, str) and _CONTROL.search(item):
            problems.append((_where((root, _printable(key))), CONTROL_PROBLEM))
    return problems


def free_text_problems(text: str | None, root: str) -> list[Problem]:
    """An operator's free text (a reason): no control character but tab and newline, nothing invisible."""
    return [(root, FREE_TEXT_PROBLEM)] if text is not None and _FREE_TEXT_BAD.search(text) else []


def escaped(text: str) -> str:
    """`text` with every control and invisible character written as its escape (a newline as
    \\n, NUL as \\x00, a bidi override as \\u202e): text that shows what it holds and that a
    name, id or key field takes."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def quoted(text: str, limit: int = 64) -> str:
    """`text` quoted for an answer or a log line: every control and invisible character escaped
    (a bidi override shown as \\u202e, not obeyed), cut to `limit` characters."""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    shown = _FREE_TEXT_BAD.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), printable(cut))
    return '"' + shown.replace("\n", "\\n").replace("\t", "\\t").replace('"', '\\"') + '"'


def check_input(limits: InputLimits, identifiers: tuple[str, ...] = (), *, free_text: tuple[str, ...] = ("reason",),
                **fields: Any) -> None:
    """Raise InvalidInput naming every problem of these request fields (None: absent).

    A dict or list is checked as JSON (parameters, labels); a string as one bounded text field.
    The fields named in `identifiers` (ids, keys, labels, an actor) must hold no control or
    invisible character either; the fields named in `free_text` (a reason, a callback's message) no
    control character but tab and newline.
    """
    problems: list[Problem] = []
    for name, value in fields.items():
        if isinstance(value, str):
            found = text_problems(value, name, limits.max_string)
        else:
            found = json_problems(value, limits, name) if value is not None else []
        if name in identifiers and not found:
            found = identifier_problems(value, name)
        if name == "actor" and not found and isinstance(value, str) and (not value.strip() or value != value.strip()):
            # Who acts is a person an approval counts once: "" or " ann" beside "ann" would count twice.
            found = [(name, "must name who acts, without spaces around it")]
        elif name in free_text and not found:
            found = free_text_problems(value, name)
        problems += found
    if problems:
        raise InvalidInput(problems[:MAX_PROBLEMS])
