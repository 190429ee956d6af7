"""Freeze windows as pure parts: when a window is open and when its freeze ends
(common/flows/freeze.py), what flows.yaml accepts and how it names a fault, and the task held by
the gate until the sweeper's `freeze_ended` lets it go (common/engine/gates/freeze/gate.py,
common/engine/gates/after_task/changes.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from common.engine.codes import WaitKind
from common.engine.gates.freeze.window import thawed, utc_text
from common.engine.registry import held
from common.engine.gates.gate import Hold
from common.engine.gates.freeze.changes import freeze_ended
from common.engine.operator.actions import cancel
from common.engine.states import TaskStatus
from common.engine.core.entries import Refusal, Timing, create_task
from common.errors import FlowError
from common.flows import parse_flows
from common.flows.freeze import FreezePolicy, FreezeWindow, freeze_for, open_freeze, parse_duration
from tests.support.builders import counter_ids
from tests.unit.test_graph_transitions import diamond, runs

FRIDAY_18 = datetime(2026, 11, 27, 18, 0, tzinfo=UTC).timestamp()  # a Friday
WEEKEND = FreezeWindow("weekend", "0 18 * * 5", 64 * 3600, ("deploy",), FreezePolicy.WAIT)


def at(day: int, hour: int, minute: int = 0) -> float:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC).timestamp()


def test_a_window_is_open_from_its_tick_for_its_duration_and_not_a_second_longer():
    assert open_freeze(WEEKEND, at(27, 17, 59)) is None
    assert open_freeze(WEEKEND, FRIDAY_18).until == at(30, 10)  # Monday 10:00
    assert open_freeze(WEEKEND, at(29, 12)).until == at(30, 10)
    assert open_freeze(WEEKEND, at(30, 10)) is None  # the end itself is out
    assert open_freeze(WEEKEND, at(25, 12)) is None


def test_a_window_keeps_its_time_zone():
    paris = FreezeWindow("evening", "0 18 * * *", 3600, ("deploy",), FreezePolicy.WAIT, "Europe/Paris")
    assert open_freeze(paris, at(27, 17, 30)).until == at(27, 18)  # 18:00 in Paris is 17:00 UTC in winter
    assert open_freeze(paris, at(27, 18, 30)) is None


def test_overlapping_windows_make_one_freeze_that_ends_with_the_last():
    every_ten = FreezeWindow("busy", "*/10 * * * *", 15 * 60, ("deploy",), FreezePolicy.WAIT)
    chained = open_freeze(every_ten, at(27, 12, 3))
    assert chained is not None and chained.until > at(27, 12, 3) + 1000 * 600  # never closes: capped
    hourly = FreezeWindow("hourly", "0 * * * *", 90 * 60, ("deploy",), FreezePolicy.WAIT)
    assert open_freeze(hourly, at(27, 12, 10)).until > at(27, 13, 30)


def test_a_refusing_window_wins_else_the_waiting_one_that_ends_last():
    short = FreezeWindow("short", "0 18 * * 5", 3600, ("deploy",), FreezePolicy.WAIT)
    refuse = FreezeWindow("no", "0 18 * * 5", 600, ("deploy", "other"), FreezePolicy.REFUSE)
    assert freeze_for((short, WEEKEND), "deploy", at(27, 18, 30)).window is WEEKEND
    assert freeze_for((short, WEEKEND, refuse), "deploy", at(27, 18, 5)).window is refuse
    assert freeze_for((short, WEEKEND, refuse), "deploy", at(27, 18, 15)).window is WEEKEND
    assert freeze_for((short, WEEKEND), "unlisted", at(27, 18, 30)) is None


@pytest.mark.parametrize(("text", "seconds"), [("64h", 230400.0), ("1h30m", 5400.0), ("90s", 90.0), ("2d", 172800.0),
                                               (45, 45.0), (0.5, 0.5), ("", None), ("h", None), ("0s", None),
                                               (0, None), (-3, None), (True, None), ("30m1h", None),
                                               ("367d", None), ("366d", 366 * 86400.0), (float("nan"), None)])  # fmt: skip
def test_a_duration_is_seconds_or_units_largest_first(text, seconds):
    assert parse_duration(text) == seconds


FLOWS = """version: 1
task_types:
  deploy:
    steps:
      - name: s
        normal: {module: m, command: c}
freeze:
"""


def problems(freeze_block: str) -> list[str]:
    with pytest.raises(FlowError) as raised:
        parse_flows(FLOWS + freeze_block, "flows.yaml")
    return raised.value.problems


def test_flows_yaml_names_each_fault_of_a_freeze_block_by_line_and_path():
    found = problems("""  - name: weekend
    cron: "0 18 * * 5"
    duration: 64h
    task_types: [deploy]
    policy: wait
  - name: weekend
    cron: "0 18 * * 8"
    duration: 64x
    timezone: Mars/Base
    task_types: [deploy, typo]
    policy: later
    colour: red
""")
    assert found == [
        'flows.yaml:13: freeze[1].name: another freeze window is named "weekend" already: names must differ',
        "flows.yaml:14: freeze[1].cron: is not a five-field cron expression (minute hour day month weekday; "
        "numbers, *, ranges, steps, lists)",
        'flows.yaml:15: freeze[1].duration: must be seconds (a number > 0) or a duration like "64h", "1h30m", '
        '"90s", "2d", at most 366 days (got "64x")',
        'flows.yaml:16: freeze[1].timezone: is not a known time zone (IANA name, e.g. Europe/Paris; got "Mars/Base")',
        'flows.yaml:17: freeze[1].task_types[1]: names unknown task type "typo" (task types: deploy)',
        "flows.yaml:18: freeze[1].policy: must be one of 'wait' or 'refuse' (got \"later\")",
        "flows.yaml:19: freeze[1].colour: unknown key; allowed keys here: name, cron, duration, timezone, "
        "task_types, policy, description",
    ]


@pytest.mark.parametrize(("cron", "duration", "gap"), [("0 * * * *", "2h", "1h"), ("*/10 * * * *", "15m", "10m"),
                                                   ("0 18 * * 5", "8d", "7d"), ("0 9 1,2 * *", "25h", "1d")])
def test_a_window_longer_than_the_time_between_its_openings_is_refused_naming_the_line(cron, duration, gap):
    found = problems(f"""  - name: weekend
    cron: "{cron}"
    duration: {duration}
    task_types: [deploy]
    policy: wait
""")
    assert len(found) == 1 and found[0].startswith(f"flows.yaml:10: freeze[0].duration: lasts {duration}, longer than "
                                                   f"the {gap} between two openings of its cron ("), found
    assert found[0].endswith(f"it would still be open when it opens again, and never close; make it at most {gap}")


def test_a_window_as_long_as_its_period_is_accepted_and_open_at_every_moment():
    catalog = parse_flows(FLOWS + "  - {name: always, cron: '0 0 * * *', duration: 24h, task_types: [deploy], policy: wait}\n")
    (window,) = catalog.freezes
    assert all(open_freeze(window, at(27, hour, 59)) is not None for hour in range(24))


def test_a_freeze_block_without_its_keys_says_which_are_missing():
    found = problems("  - {name: weekend}\n")
    assert any("freeze[0].cron: required key is missing" in p for p in found)
    assert any("freeze[0].policy: required key is missing" in p for p in found)


def test_a_valid_freeze_block_reaches_the_catalog():
    catalog = parse_flows(FLOWS + "  - {name: weekend, cron: '0 18 * * 5', duration: 64h, task_types: [deploy],"
                                  " policy: refuse, timezone: Europe/Paris}\n")  # fmt: skip
    assert catalog.freezes == (FreezeWindow("weekend", "0 18 * * 5", 230400.0, ("deploy",), FreezePolicy.REFUSE,
                                            "Europe/Paris"),)  # fmt: skip


def frozen_task(until: float = 500.0, **kwargs):
    return create_task(task_type="t", steps=diamond(), parameters={}, timing=Timing(100.0),
                       ids=counter_ids("f"), freeze=("weekend", until), **kwargs)  # fmt: skip


def test_a_task_created_in_a_window_dispatches_nothing_and_the_sweeper_comes_at_its_end():
    task = frozen_task(deadline_seconds=60)
    wait = task.WaitingFor
    assert (wait.Kind, wait.Key, wait.Since, wait.Until, wait.RecheckAt) == (WaitKind.FREEZE, "weekend", 100.0, 500.0, 500.0)
    assert task.Runs == [] and task.Outbox == [] and held(task) is Hold.ALL
    assert task.Deadline == 560.0  # its time counts from the window's end
    assert task.History[-1].Event == "waiting_for_freeze"
    assert task.History[-1].Message == f"waiting for freeze window weekend to end at {utc_text(500.0)}"
    task.to_doc()
    assert task.SweepAt == 500.0


def test_the_window_ends_and_the_roots_dispatch():
    task = frozen_task()
    assert isinstance(freeze_ended(task, Timing(499.9)), Refusal) and not thawed(task, 499.9)
    going = freeze_ended(task, Timing(500.0), ids=counter_ids("g"))
    assert going.WaitingFor is None and runs(going) == [(0, None, 0)]
    assert "freeze_ended" in [e.Event for e in going.History]
    assert isinstance(freeze_ended(going, Timing(501.0)), Refusal)  # once


def test_a_frozen_task_takes_its_lock_only_once_the_window_ended():
    task = frozen_task(lock=("cluster:eu", 1))
    assert task.Lock.State == "pending" and task.Outbox == []
    going = freeze_ended(task, Timing(500.0))
    assert going.WaitingFor.Kind is WaitKind.LOCK and [e.Kind for e in going.Outbox] == ["lock_acquire"]


def test_a_frozen_task_created_after_another_waits_for_it_next_and_is_looked_at_at_once():
    going = freeze_ended(frozen_task(after_task="other"), Timing(500.0))
    assert (going.WaitingFor.Kind, going.WaitingFor.TaskId, going.WaitingFor.RecheckAt) == (WaitKind.TASK, "other", 500.0)
    assert going.Runs == []


def test_a_frozen_task_cancelled_ends_and_is_never_let_go():
    ended = cancel(frozen_task(), "olga", "not needed", Timing(200.0))
    assert ended.TaskStatus is TaskStatus.ROLLED_BACK
    assert held(ended) is Hold.NONE and isinstance(freeze_ended(ended, Timing(600.0)), Refusal)
    ended.to_doc()
    assert ended.SweepAt is None
