"""What waves cost the engine per item (docs/design/waves.md): a for_each step over item records
driven in process on a SQLite file (no broker, no module: each dispatched item claimed and
concluded by this process, its owes applied as a module's would), once without waves and once
with `waves: [1, "10%", rest]`, side by side, in items per second. The difference is the look
for a wave's end after each item (a few indexed look-ups) and each wave's opening. Prints
figures, asserts nothing. `python -m bench.waves`; BATON_BENCH_WAVE_ITEMS (default 2000) and
BATON_BENCH_WAVE_PARALLEL (default 20) size it."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from common.engine.changes import AttemptResult, Timing, claim_item, create_task, finish_item_attempt, new_id, use_records
from common.engine.document import Step, Task, WaveSpecDoc
from common.engine.outbox import Flusher, kinds_of
from common.engine.states import ResultCode, StepState, TaskStatus
from common.relay.items import ItemRelay
from common.store.sqlite.items import SqliteItemStore
from common.store.sqlite.tasks import SqliteStore

ITEMS = int(os.environ.get("BATON_BENCH_WAVE_ITEMS", "2000"))
PARALLEL = int(os.environ.get("BATON_BENCH_WAVE_PARALLEL", "20"))
OK = AttemptResult(ResultCode.OK, output={})

ITEM_KINDS = kinds_of(Flusher.ITEMS)  # the entries the item relay applies


def _timing() -> Timing:
    return Timing(time.time(), lease=30)


def run(path: Path, waves: list[WaveSpecDoc] | None) -> float:
    """Items per second of one step of ITEMS items, from its opening to the task's success."""
    use_records(True)
    tasks, items = SqliteStore(path), SqliteItemStore(path)
    dispatched: list = []
    sent: set[str] = set()

    def flush(task: Task) -> None:
        for entry in task.Outbox:
            if entry.Kind in ITEM_KINDS and entry.DispatchId not in sent:
                sent.add(entry.DispatchId)
                relay.apply(task.TaskId, entry)

    relay = ItemRelay(tasks, items, _timing, flush, dispatched.append)
    step = Step(Name="patch", NormalModule="m", NormalCommand="c", After=[], ForEach="hosts", MaxParallel=PARALLEL,
                Waves=waves)
    task = create_task(task_type="t", steps=[step], parameters={"hosts": [f"h{i}" for i in range(ITEMS)]},
                       timing=_timing())
    began = time.perf_counter()
    tasks.insert(task)
    flush(task)
    while dispatched:
        record = dispatched.pop()
        current = tasks.get(task.TaskId)
        stored = items.get_item(task.TaskId, 0, 0, record.Item)
        if stored is None or stored.Run is None or stored.State is not StepState.RUNNING:
            continue
        claimed = claim_item(stored, current, stored.Run.DispatchId, "bench", _timing())
        claimed.Version = stored.Version + 1
        assert items.compare_and_set_item(claimed, stored.Version)
        done = finish_item_attempt(claimed, current, claimed.Run.DispatchId, "bench", OK, _timing(), new_id)
        done.Version = claimed.Version + 1
        assert items.compare_and_set_item(done, claimed.Version)
        relay.apply_owes(done)
    took = time.perf_counter() - began
    final = tasks.get(task.TaskId)
    assert final.TaskStatus is TaskStatus.SUCCESS, final.TaskMessage
    items.close()
    tasks.close()
    return ITEMS / took


def main() -> None:
    waves = [WaveSpecDoc(Size=1), WaveSpecDoc(Size="10%"), WaveSpecDoc(Size="rest")]
    with tempfile.TemporaryDirectory() as workdir:
        run(Path(workdir) / "warm.db", None)  # the first run pays for imports and caches: not counted
        plain = run(Path(workdir) / "plain.db", None)
        waved = run(Path(workdir) / "waves.db", waves)
    print(f"waves: {ITEMS} items, max_parallel {PARALLEL}, SQLite, in process (no broker, no module)")
    print(f"  without waves              {plain:8.0f} items/s")
    print(f"  waves [1, \"10%\", rest]      {waved:8.0f} items/s  ({waved / plain:.0%} of without)")


if __name__ == "__main__":
    main()
