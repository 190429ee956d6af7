"""A dry run's plan says its start in the words of what holds it (each gate's `PLAN_START` in its
shown.py, found through the registry): the CLI and the console print them, so a gate's start reads
the same everywhere, a rate's too, without a line of either naming it."""

from __future__ import annotations

from pathlib import Path

from common.engine.core.entries import Timing, create_task
from common.engine.gates.rate.documents import KeyRate
from common.engine.gates.rate.window import take
from common.engine.views import start_phrases
from oss.cli.plan_text import plan_lines
from oss.services.plans import START_PHRASES, plan_of
from tests.support.builders import counter_ids, make_step

ROOT = Path(__file__).resolve().parents[2]
IDS = counter_ids("w")


def test_a_start_a_full_rate_holds_reads_in_the_rate_gates_words() -> None:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=IDS,
                       rate=("host:db1", 1, 60.0))
    full, _ = take(KeyRate(Key="host:db1"), "other:g0", 1, 60.0, 90.0)
    plan = plan_of(task, existing=False, awaited=None, registrations=[], now=100.0, module_ttl=30.0,
                   read={"rate": {"host:db1": full}})
    assert (plan.start.when, plan.start.text) == ("rate", "once a start slot of its rate frees")
    assert "\n  starts: once a start slot of its rate frees\n" in "\n".join(plan_lines(plan))


def test_a_start_nothing_holds_reads_now() -> None:
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=IDS)
    plan = plan_of(task, existing=False, awaited=None, registrations=[], now=100.0, module_ttl=30.0)
    assert (plan.start.when, plan.start.text) == ("now", "now")


def test_every_start_the_plan_can_say_has_its_gates_words_and_the_console_names_none() -> None:
    assert set(start_phrases()) == {"freeze", "after_task", "lock", "rate", "at"}
    assert set(START_PHRASES) == {"now", "never", *start_phrases()}
    console = (ROOT / "oss" / "console" / "static" / "plan.js").read_text()
    assert not [words for words in start_phrases().values() if words.lower() in console.lower()]


def test_the_gates_plan_fields_stand_between_the_steps_and_the_modules_and_one_field_is_one_folders() -> None:
    """Each gate folder's plan.py fills its fields of the plan (found by folder): the answer keeps
    them where it always had them, and a field two folders declare is refused naming both."""
    from types import SimpleNamespace

    import pytest

    from common.engine.core.plan_parts import merged_plan_fields
    from common.engine.views import plan_fields
    from oss.services.plans import Plan

    assert list(plan_fields()) == ["locks", "rate"]
    assert list(Plan.model_fields) == ["task_type", "existing_task_id", "parameters", "start", "steps", "locks", "rate",
                                       "modules", "warnings"]  # fmt: skip
    one = SimpleNamespace(__name__="common.engine.gates.lock.plan", PLAN_FIELDS={"locks": (list, ...)})
    two = SimpleNamespace(__name__="common.engine.gates.mutex.plan", PLAN_FIELDS={"locks": (list, ...)})
    with pytest.raises(ValueError, match="plan field 'locks' is declared by common.engine.gates.lock.plan and by "
                                         "common.engine.gates.mutex.plan"):
        merged_plan_fields((one, two))  # type: ignore[arg-type]
