"""Checks of `freeze:` that the schema cannot express: each window names task types the file
defines, no two windows share a name (the name is what a held task and a refusal show), and no
window lasts longer than the time between two of its openings (it would never close)."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from common.flows.freeze import FreezePolicy, FreezeWindow, parse_duration, self_overlap

from common.spec.problems import describe
from common.spec.problems import Path, Problem, at
from common.spec.problems import Lines


def freeze_checks(data: dict[str, Any], lines: Lines, now: float | None = None) -> list[Problem]:
    windows = data.get("freeze")
    task_types = data.get("task_types")
    known = set(task_types) if isinstance(task_types, dict) else None
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, window in enumerate(windows if isinstance(windows, list) else []):
        if not isinstance(window, dict):
            continue  # the schema reports it
        base: Path = ("freeze", index)
        name = window.get("name")
        if isinstance(name, str):
            if name in seen:
                problems.append(at(lines.value(base + ("name",)), base + ("name",),
                                   f"another freeze window is named {describe(name)} already: names must differ"))  # fmt: skip
            seen.add(name)
        listed = window.get("task_types")
        for position, task_type in enumerate(listed if isinstance(listed, list) else []):
            if known is not None and isinstance(task_type, str) and task_type not in known:
                path = base + ("task_types", position)
                choices = ", ".join(sorted(known)) or "none"
                problems.append(at(lines.value(path), path,
                                   f"names unknown task type {describe(task_type)} (task types: {choices})"))  # fmt: skip
        problems += _overlap_problems(window, base, lines, time.time() if now is None else now)
    return problems


def _overlap_problems(window: dict[str, Any], base: Path, lines: Lines, now: float) -> list[Problem]:
    """A window that would still be open when its cron opens it again never closes."""
    duration = parse_duration(window.get("duration"))
    cron, zone = window.get("cron"), window.get("timezone", "UTC")
    if duration is None or not isinstance(cron, str) or not isinstance(zone, str):
        return []  # the schema reports it
    try:
        found = self_overlap(FreezeWindow("", cron, duration, (), FreezePolicy.WAIT, zone), now)
    except Exception:  # noqa: BLE001  (a cron or time zone the schema refuses: reported there)
        return []
    if found is None:
        return []
    first, second = (_utc(t) for t in found)
    path = base + ("duration",)
    written = window["duration"] if isinstance(window["duration"], str) else _span(duration)
    return [at(lines.value(path), path,
               f"lasts {written}, longer than the {_span(found[1] - found[0])} between two openings of its cron "
               f"({first} and {second}): it would still be open when it opens again, and never close; make it "
               f"at most {_span(found[1] - found[0])}")]  # fmt: skip


def _utc(moment: float) -> str:
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _span(seconds: float) -> str:
    """Seconds as the largest units that add up to them: 2h, 1h30m, 90s -> 1m30s."""
    parts, left = [], int(seconds)
    for unit, name in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if left >= unit:
            parts.append(f"{left // unit}{name}")
            left %= unit
    return "".join(parts) or f"{seconds:g}s"
