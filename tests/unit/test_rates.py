"""Rate limits, the pure parts (docs/design/rates.md): the sliding window's decision, a task's
wait and its changes, flows.yaml's `rate:` and its problems with file, line and path."""

from __future__ import annotations

import random

import pytest

from common.engine.codes import OutboxKind, WaitKind
from common.engine.core.entries import Timing, create_task
from common.engine.gates.rate.changes import rate_deferred, rate_taken
from common.engine.gates.rate.documents import KeyRate
from common.engine.states import RateState
from common.engine.gates.rate.window import Full, Taken, slots_left, take
from common.engine.operator.actions import cancel
from common.engine.registry import gate_of_wait
from common.errors import FlowError
from common.flows.loader import parse_flows
from tests.support.builders import counter_ids, make_step

IDS = counter_ids("r")


def taking(rate: KeyRate, member: str, now: float, limit: int = 2, per: float = 60.0) -> tuple[KeyRate, Taken | Full]:
    return take(rate, member, limit, per, now)


def test_limit_starts_per_window_then_the_next_slot_is_when_the_oldest_leaves() -> None:
    rate = KeyRate(Key="k")
    rate, a = taking(rate, "a", 100.0)
    rate, b = taking(rate, "b", 110.0)
    rate, c = taking(rate, "c", 120.0)
    assert (a, b, c) == (Taken(100.0), Taken(110.0), Full(160.0))
    rate, c = taking(rate, "c", 160.0)  # a's start left the window (100 + 60 is not in (100, 160])
    assert c == Taken(160.0) and [s.Member for s in rate.Starts] == ["b", "c"]  # a pruned
    rate, d = taking(rate, "d", 165.0)
    assert d == Full(170.0)


def test_taking_again_gives_a_member_its_own_slot_and_never_a_second_one() -> None:
    rate, first = taking(KeyRate(Key="k"), "a", 100.0)
    same, again = taking(rate, "a", 130.0)
    assert again == first and same is rate  # nothing to write


def test_slot_times_never_go_back_whoever_clock_is_behind() -> None:
    rate, _ = taking(KeyRate(Key="k"), "a", 100.0, limit=5)
    rate, b = taking(rate, "b", 90.0, limit=5)  # a process whose clock is 10 s behind
    assert b == Taken(100.0)


def test_the_newest_declared_limit_and_window_win() -> None:
    rate = KeyRate(Key="k")
    for member, now in (("a", 1.0), ("b", 2.0)):
        rate, _ = taking(rate, member, now, limit=2)
    assert isinstance(taking(rate, "c", 3.0, limit=2)[1], Full)
    rate, c = taking(rate, "c", 3.0, limit=3)
    assert c == Taken(3.0) and rate.Limit == 3


def test_no_window_ever_holds_more_than_the_limit_under_random_arrivals() -> None:
    rng = random.Random(7)
    for _ in range(50):
        limit, per = rng.randint(1, 5), rng.choice([1.0, 5.0, 60.0])
        rate, slots, now = KeyRate(Key="k"), [], 0.0
        for n in range(200):
            now += rng.expovariate(limit / per * 3)  # three times faster than the limit allows
            rate, outcome = take(rate, f"t{n}", limit, per, now)
            if isinstance(outcome, Taken):
                slots.append(outcome.at)
            else:
                assert outcome.next_at > now
        # the densest window of `per` seconds, from each slot on
        assert max(sum(1 for t in slots if s <= t < s + per) for s in slots) <= limit
        assert len(slots) > limit


def test_slots_left_for_a_plan() -> None:
    rate = KeyRate(Key="k")
    assert slots_left(None, 3, 60.0, 100.0) == (3, None)
    for member, now in (("a", 100.0), ("b", 101.0), ("c", 102.0)):
        rate, _ = take(rate, member, 3, 60.0, now)
    assert slots_left(rate, 3, 60.0, 130.0) == (0, 160.0)
    assert slots_left(rate, 3, 60.0, 160.5) == (1, None)


def created(ask: tuple[str, int, float] | None = ("host:db1", 2, 60.0), **asks: object):
    return create_task(task_type="t", steps=[make_step("s")], parameters={"host": "db1"}, timing=Timing(100.0),
                       ids=IDS, rate=ask, **asks)


def test_a_task_waits_for_a_slot_then_starts_in_the_change_that_takes_it() -> None:
    task = created()
    assert task.WaitingFor.Kind is WaitKind.RATE and task.Runs == []
    (entry,) = task.Outbox
    assert entry.Kind is OutboxKind.RATE_TAKE and entry.Body == {
        "Key": "host:db1", "Limit": 2, "Per": 60.0, "TaskId": task.TaskId, "Generation": 0}
    later = rate_deferred(task, "host:db1", 160.0, 101.0)
    (again,) = later.Outbox
    assert again.DueAt == 160.0 and again.DispatchId != entry.DispatchId  # the old one's mark-sent leaves it
    assert gate_of_wait(later.WaitingFor.Kind).describe_wait(later, later.WaitingFor) == (
        "host:db1: 2 per 60s, next slot at 1970-01-01T00:02:40Z")
    started = rate_taken(later, "host:db1", 160.0, Timing(160.2))
    assert started.WaitingFor is None and started.Rate.State is RateState.TAKEN and started.Rate.Since == 160.0
    assert [e.Kind for e in started.Outbox] == [OutboxKind.PUBLISH]
    assert [(e.Event, e.Time) for e in started.History if e.Event == "rate_taken"] == [("rate_taken", 160.0)]
    assert rate_taken(started, "host:db1", 161.0, Timing(161.0)).reason  # a relay's repeat: refused


def test_a_task_without_a_rate_is_written_as_before_and_a_cancelled_waiter_leaves_nothing() -> None:
    assert "Rate" not in created(None).to_doc()
    task = created()
    ended = cancel(task, "op", "no longer needed", Timing(120.0))
    assert ended.WaitingFor is None and not [e for e in ended.Outbox if e.Kind is OutboxKind.RATE_TAKE]


def test_the_rate_waits_for_the_lock_first_and_for_a_delayed_start() -> None:
    task = created(lock=("db:1", 1))
    assert task.WaitingFor.Kind is WaitKind.LOCK and task.Rate.State is RateState.PENDING
    delayed = created(start_at=500.0)
    assert delayed.Outbox[0].DueAt == 500.0  # a slot is a start: never taken before the task may start


FLOWS = """\
version: 1
task_types:
  create_db:
    rate: {key: "host:{host}", limit: 10, per: 60s}
    parameters:
      host: {type: string}
      password: {type: string, secret: true}
    steps:
      - name: s
        normal: {module: m, command: c}
"""

STEP_FLOWS = """\
version: 1
task_types:
  t:
    parameters:
      host: {type: string}
      hosts: {type: array, default: []}
    steps:
      - name: create
        rate: {key: "host:{host}", limit: 2, per: 1m}
        normal: {module: m, command: c, retry: 1}
"""


def test_flows_declares_a_rate_and_its_window_in_seconds() -> None:
    flow = parse_flows(FLOWS).get("create_db")
    assert (flow.rate.Key, flow.rate.Limit, flow.rate.Per) == ("host:{host}", 10, 60.0)
    assert tuple(flow.rate_ask({"host": "db1"})) == ("host:db1", 10, 60.0)
    assert parse_flows(FLOWS.replace("per: 60s", "per: 1h30m")).get("create_db").rate.Per == 5400.0
    assert parse_flows(FLOWS.replace("per: 60s", "per: 2.5")).get("create_db").rate.Per == 2.5
    assert not flow.validate({}).ok  # the key names host: required


@pytest.mark.parametrize(("flows", "edit", "expected"), [
    (FLOWS, ("per: 60s", "per: 0"), "flows.yaml:4: task_types.create_db.rate.per: must be seconds or a duration"),
    (FLOWS, ("per: 60s", "per: 2d"), "flows.yaml:4: task_types.create_db.rate.per: must be seconds or a duration"),
    (FLOWS, ("per: 60s", "per: 90000"), "flows.yaml:4: task_types.create_db.rate.per:"),
    (FLOWS, ("limit: 10", "limit: 0"), "flows.yaml:4: task_types.create_db.rate.limit:"),
    (FLOWS, ("limit: 10", "limit: 100001"), "flows.yaml:4: task_types.create_db.rate.limit:"),
    (FLOWS, ("limit: 10, ", ""), "flows.yaml:4: task_types.create_db.rate.limit:"),
    (FLOWS, ("per: 60s", "per: 60s, burst: 2"), "flows.yaml:4: task_types.create_db.rate.burst:"),
    (FLOWS, ("host:{host}", "host:{region}"),
     'flows.yaml:4: task_types.create_db.rate.key: names unknown parameter "region"'),
    (FLOWS, ("host:{host}", "host:{password}"), 'flows.yaml:4: task_types.create_db.rate.key: names secret parameter'),
    (FLOWS, ("host:{host}", "host:{host!r}"), "flows.yaml:4: task_types.create_db.rate.key: not a key template"),
    # A step's rate.
    (STEP_FLOWS, ("        normal: {module: m, command: c, retry: 1}",
                  "        for_each: hosts\n        normal: {module: m, command: c}"),
     "flows.yaml:9: task_types.t.steps[0].rate: a for_each step takes no rate"),
    (STEP_FLOWS, ("        normal: {module: m, command: c, retry: 1}",
                  "        lock: {key: h}\n        normal: {module: m, command: c}"),
     "flows.yaml:9: task_types.t.steps[0].rate: a step takes a lock or a rate, not both"),
    (STEP_FLOWS, ("host:{host}", "host:{nope}"),
     'flows.yaml:9: task_types.t.steps[0].rate.key: names unknown parameter "nope"'),
    (STEP_FLOWS, ("per: 1m", "per: -1"), "flows.yaml:9: task_types.t.steps[0].rate.per:"),
])
def test_a_bad_rate_is_refused_with_file_line_and_path(flows: str, edit: tuple[str, str], expected: str) -> None:
    text = flows.replace(*edit)
    assert text != flows
    with pytest.raises(FlowError) as caught:
        parse_flows(text, "flows.yaml")
    assert any(p.startswith(expected) for p in caught.value.problems), caught.value.problems


def test_the_guides_example_loads_and_its_error_reads_as_the_guide_says() -> None:
    from tests.support.doc_examples import blocks, section

    page = "docs/guide/rate-limits.md"
    (example,) = blocks(page, "Declaring a rate", "yaml")
    flow = parse_flows(example, page).get("create_database")
    assert (flow.rate.Key, flow.rate.Limit, flow.rate.Per) == ("host:{host}", 10, 60.0)
    with pytest.raises(FlowError) as caught:
        parse_flows(example.replace("per: 60s", "per: 2d"), "flows.yaml")
    (problem,) = caught.value.problems
    assert problem in " ".join(section(page, "Declaring a rate").split())


def test_a_retried_task_asks_for_a_new_slot_as_a_new_member() -> None:
    from common.engine.operator.actions import retry

    task = rate_taken(created(), "host:db1", 100.0, Timing(100.0))
    ended = cancel(task, "op", "stop", Timing(101.0))
    assert ended.TaskStatus.name == "ROLLED_BACK"  # nothing claimed: nothing to undo
    again = retry(ended, "op", "once more", Timing(200.0))
    assert again.WaitingFor.Kind is WaitKind.RATE and again.Rate.State is RateState.WAITING
    (entry,) = [e for e in again.Outbox if e.Kind is OutboxKind.RATE_TAKE]
    assert entry.Body["Generation"] == again.Generation == 1


def test_each_attempt_of_a_rated_step_waits_for_a_slot_then_is_published() -> None:
    from common.engine.core.entries import AttemptResult, claim, finish_attempt
    from common.engine.core.units import step_message
    from common.engine.gates.rate.unit_rate import unit_rate_deferred, unit_rate_taken
    from common.engine.states import Phase, ResultCode, RunState

    flow = parse_flows(STEP_FLOWS).get("t")
    assert flow.steps[0].Rate.Per == 60.0
    task = create_task(task_type="t", steps=flow.steps, parameters={"host": "db1"}, timing=Timing(100.0), ids=IDS)
    (run,) = task.Runs
    assert run.State is RunState.WAITING_RATE and run.Deadline is None
    (entry,) = task.Outbox
    assert entry.Kind is OutboxKind.RATE_TAKE and entry.Body["DispatchId"] == run.DispatchId
    later = unit_rate_deferred(task, run.DispatchId, "host:db1", 2, 60.0, 130.0)
    assert [(e.DueAt, e.DispatchId != entry.DispatchId) for e in later.Outbox] == [(130.0, True)]
    published = unit_rate_taken(later, run.DispatchId, "host:db1", 130.0, Timing(130.0))
    assert published.Runs[0].State is RunState.PENDING and [e.Kind for e in published.Outbox] == [OutboxKind.PUBLISH]
    assert unit_rate_taken(published, run.DispatchId, "host:db1", 131.0, Timing(131.0)).reason  # a repeat
    claimed = claim(published, step_message(published, published.Runs[0]), "w", Timing(131.0))
    failed = finish_attempt(claimed, claimed.Runs[0].DispatchId, "w", AttemptResult(ResultCode.FAILED, "x"),
                            Timing(132.0, retry_delay=5.0))
    (retry,) = failed.Runs
    assert (retry.Attempt, retry.Phase, retry.State) == (2, Phase.NORMAL, RunState.WAITING_RATE)  # a new slot
    assert [e.DueAt for e in failed.Outbox if e.Kind is OutboxKind.RATE_TAKE] == [137.0]  # not before its backoff
    stopped = cancel(failed, "op", "enough", Timing(133.0))
    assert stopped.Runs == [] or all(r.Phase is not Phase.NORMAL for r in stopped.Runs)  # unclaimed: withdrawn


def test_a_step_without_a_rate_is_written_and_hashed_as_before() -> None:
    plain = STEP_FLOWS.replace('        rate: {key: "host:{host}", limit: 2, per: 1m}\n', "")
    flow = parse_flows(plain).get("t")
    assert "Rate" not in flow.steps[0].model_dump()


def test_a_plan_names_a_steps_rate_and_says_when_the_tasks_rate_lets_it_start() -> None:
    from oss.cli.plan_text import plan_lines
    from oss.services.plans import plan_of

    flow = parse_flows(STEP_FLOWS).get("t")
    task = create_task(task_type="t", steps=flow.steps, parameters={"host": "db1"}, timing=Timing(100.0), ids=IDS,
                       rate=("host:db1", 1, 60.0))
    full, _ = take(KeyRate(Key="host:db1"), "other:g0", 1, 60.0, 90.0)
    plan = plan_of(task, existing=False, awaited=None, registrations=[], now=100.0, module_ttl=30.0,
                   read={"rate": {"host:db1": full}})
    assert plan.steps[0].rate == "host:{host}: 2 per 60s"
    assert (plan.rate.slots_left, plan.rate.next_slot_at, plan.start.when) == (0, 150.0, "rate")
    lines = "\n".join(plan_lines(plan))
    assert "rate host:{host}: 2 per 60s" in lines and "rate: host:db1 (1 per 60s): full, next slot at" in lines


def test_a_sub_flows_child_takes_its_types_rate_keyed_by_its_parameters() -> None:
    from common.engine.kinds.sub_flow.changes import start_child

    flows = """\
version: 1
task_types:
  parent:
    parameters: {db: {type: string}}
    steps:
      - name: make
        flow: child
        inputs: {host: db}
  child:
    rate: {key: "host:{host}", limit: 3, per: 10s}
    parameters: {host: {type: string}}
    steps:
      - name: s
        normal: {module: m, command: c}
"""
    catalog = parse_flows(flows)
    assert catalog.get("parent").steps[0].FlowTemplate.Rate.Limit == 3
    plain = parse_flows(flows.replace('    rate: {key: "host:{host}", limit: 3, per: 10s}\n', ""))
    assert "Rate" not in plain.get("parent").steps[0].FlowTemplate.model_dump()
    parent = create_task(task_type="parent", steps=catalog.get("parent").steps, parameters={"db": "db7"},
                         timing=Timing(100.0), ids=IDS)
    (entry,) = [e for e in parent.Outbox if e.Kind is OutboxKind.START_CHILD]
    child = start_child(entry.Body, Timing(101.0), IDS)
    assert child.WaitingFor.Kind is WaitKind.RATE and (child.Rate.Key, child.Rate.Limit, child.Rate.Per) == (
        "host:db7", 3, 10.0)
