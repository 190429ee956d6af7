"""What others show or decide of a gate comes from its hooks, through the registry (docs/design/gates.md):
the keys a dry run's plan reads of each gate's table (`plan_reads`), a migrate's doubt when a
revision changes a gate's ask (`move_doubts`), and the entry that carries a delayed start
(`start_entries`). The dry run, the migrate and the task view name no gate."""

from __future__ import annotations

from pathlib import Path

from common.engine.core.entries import Timing, create_task
from common.engine.document import LockTemplate
from common.engine.gates.lock.task_lock import LockAsk
from common.engine.registry import move_doubts, plan_reads, start_entries
from tests.support.builders import counter_ids, make_step

ROOT = Path(__file__).resolve().parents[2]
IDS = counter_ids("h")


def locked_task(start_at: float | None = None):
    step = make_step("a").model_copy(update={"Lock": LockTemplate(Key="host:{host}")})
    return create_task(task_type="t", steps=[step, make_step("b")], parameters={"host": "db1"}, timing=Timing(100.0),
                       ids=IDS, lock=("cluster:eu", 2), rate=("api:eu", 5, 60.0), start_at=start_at)


def test_a_plan_reads_the_keys_each_gate_names_of_its_table() -> None:
    assert plan_reads(locked_task()) == {"lock": ["host:db1", "cluster:eu"], "rate": ["api:eu"]}
    plain = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=IDS)
    assert plan_reads(plain) == {}


def test_a_revision_that_changes_the_tasks_lock_is_in_doubt_and_one_that_keeps_it_is_not() -> None:
    task = locked_task()
    assert move_doubts(task, {"lock": LockAsk("cluster:eu", 2)}) == []
    assert move_doubts(task, {"lock": None}) == ["its lock would change (cluster:eu (mode exclusive, limit 2) -> none)"]


def test_a_lock_asked_for_when_the_start_comes_carries_the_start() -> None:
    task = locked_task(start_at=500.0)
    (entry,) = [e for e in task.Outbox if e.DispatchId in start_entries(task)]
    assert (entry.DispatchId, entry.DueAt) == (f"{task.TaskId}:lock:g0", 500.0)  # asked for at the start
    plain = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=IDS,
                        start_at=500.0)
    assert start_entries(plain) == set()


def test_the_dry_run_the_migrate_and_the_task_view_name_no_gate() -> None:
    for path in ("oss/services/dry_run.py", "common/engine/operator/migrate.py", "oss/api/views.py", "oss/cli/tasks.py"):
        source = (ROOT / path).read_text()
        assert "common.engine.gates." not in source and "common.store.gates." not in source, path
        assert "LOCK_ACQUIRE" not in source, path
