"""What an instance may be called: one allow-list for every module that takes the name.

The name becomes a MySQL database and user name and an inventory holder, so it is checked by each
module that uses it (defence in depth: flows.yaml declares the same pattern for the task's
parameters, checked when the task is submitted). Only lowercase ASCII letters, digits and `_`:
no quote, backtick, `%`, space or non-ASCII letter can reach a statement.
"""

from __future__ import annotations

import re

INSTANCE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
_INSTANCE_NAME = re.compile(INSTANCE_NAME_PATTERN, re.ASCII)


class BadInstanceName(ValueError):
    """The name breaks the allow-list: refuse the request, nothing was created."""


def check_instance_name(value: object) -> str:
    if not isinstance(value, str):
        raise BadInstanceName(f"instance name must be a string (got {type(value).__name__})")
    # fullmatch, not match: "$" would accept a trailing newline.
    if not _INSTANCE_NAME.fullmatch(value):
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise BadInstanceName(
            f"instance name {shown!r} is not allowed: 1 to 32 characters, a lowercase letter "
            "first, then lowercase letters, digits or '_'"
        )
    return value
