"""The task document's work per transition in instructions, part by part: a figure the machine's
load does not move (bench/document.py times the same store calls in CPU time).

One process under valgrind's callgrind, counting off; for each part, what it needs is made
first (tasks inserted, copies decoded), then the counters are zeroed and switched on through
`vgdb` for exactly the part's loop, and read when it ends. The parts:

- transition: a step's claim (read) and commit on a SQLite store, as bench/document.py does;
- kept transition: the same, the claim on the task as the commit before wrote it;
- decode: a task's JSON text (the bench task at its end) read into a Task;
- encode: that task's derived fields and JSON text, as a compare-and-set writes it;
- compare-and-set: one SqliteStore.compare_and_set, its encoding included;
- claim, finish_attempt: the change alone, on a task lent to it (as mutate does).

`python -m bench.document_instructions [rounds]` (default 200); a minute or two. Needs valgrind.
The code measured is the one on PYTHONPATH: the same file counts another checkout's (an A/B).
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = ("transition", "kept transition", "decode", "encode", "compare-and-set", "claim", "finish_attempt")
STEPS = 3  # transitions per bench task


def _prepared(rounds: int, tmp: Path) -> tuple[Callable[[], None], dict[str, tuple[Callable[[], None], int]]]:
    """What settles the process before a part, and each part's loop and how many of its unit it
    does, all made before any is counted."""
    from bench.document import OWNER, _created, _run
    from bench.engine import FLOWS
    from common.engine.changes import AttemptResult, Timing, claim, finish_attempt
    from common.engine.document import StepMessage, Task, lend_to_change
    from common.engine.states import ResultCode
    from common.flows import parse_flows
    from common.store.sqlite.tasks import SqliteStore

    flow = parse_flows(FLOWS).get("bench")
    store = SqliteStore(tmp / "document.db")
    for kept in (False, True):  # warm-up: imports, caches, statements
        _run(store, _created(store, flow.steps), STEPS, kept)
    fresh = [[_created(store, flow.steps) for _ in range(rounds // 4)] for _ in range(2)]
    text = _run(store, _created(store, flow.steps), STEPS).to_json()
    decoded = Task.from_json(text)
    written = Task.from_json(text)
    store.insert(written.model_copy(update={"TaskId": "cas"}))
    cas = store.get("cas")
    assert cas is not None
    first = _created(store, flow.steps)
    message = StepMessage.model_validate(first.Outbox[0].Body)
    timing = Timing(time.time())
    to_claim = [Task.from_json(first.to_json()) for _ in range(rounds)]
    claimed = claim(first, message, OWNER, timing)
    assert isinstance(claimed, Task)
    to_finish = [Task.from_json(claimed.to_json()) for _ in range(rounds)]
    ok = AttemptResult(ResultCode.OK)

    def transitions(kept: bool) -> Callable[[], None]:
        return lambda: [_run(store, task, STEPS, kept) for task in fresh[kept]] and None

    def compare_and_set() -> None:
        for _ in range(rounds):
            cas.Version += 1
            assert store.compare_and_set(cas, cas.Version - 1)

    def changes(tasks: list[Task], change: Callable[[Task], object]) -> Callable[[], None]:
        def loop() -> None:
            for task in tasks:
                lend_to_change(task)
                assert isinstance(change(task), Task)
                lend_to_change(None)
        return loop

    def settled() -> None:
        """The same start for every part: no garbage of the one before collected inside it, and
        no SQLite checkpoint of the WAL it left (which lands wherever 1,000 pages fill up)."""
        gc.collect()
        store._conn().execute("PRAGMA wal_checkpoint(TRUNCATE)")  # noqa: SLF001

    return settled, {
        "transition": (transitions(False), len(fresh[0]) * STEPS),
        "kept transition": (transitions(True), len(fresh[1]) * STEPS),
        "decode": (lambda: [Task.from_json(text) for _ in range(rounds)] and None, rounds),
        "encode": (lambda: [decoded.to_json() for _ in range(rounds)] and None, rounds),
        "compare-and-set": (compare_and_set, rounds),
        "claim": (changes(to_claim, lambda t: claim(t, message, OWNER, timing)), rounds),
        "finish_attempt": (changes(to_finish, lambda t: finish_attempt(t, message.DispatchId, OWNER, ok, timing)), rounds),
    }


def measured(rounds: int) -> None:
    """The process under valgrind: each part's loop between two lines of the parent's."""
    with tempfile.TemporaryDirectory() as tmp:
        settled, parts = _prepared(rounds, Path(tmp))
        for name in PARTS:
            loop, units = parts[name]
            settled()
            print(f"ready {units}", flush=True)
            sys.stdin.readline()  # counting on
            loop()
            print("done", flush=True)
            sys.stdin.readline()  # counting off, read


def counted(rounds: int, keep: str | None = None) -> dict[str, float]:
    """Instructions per unit of each part; `keep`: a folder to leave each part's callgrind file in."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        run = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
             sys.executable, __file__, "--measured", str(rounds)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(REPO)},  # run as a file, not -m
        )
        assert run.stdin is not None and run.stdout is not None

        def vgdb(*command: str) -> None:
            subprocess.run(["vgdb", f"--pid={run.pid}", *command], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        found = {}
        for name in PARTS:
            units = int(run.stdout.readline().split()[1])
            vgdb("zero")
            vgdb("instrumentation", "on")
            run.stdin.write("\n")
            run.stdin.flush()
            assert run.stdout.readline().strip() == "done"
            vgdb("instrumentation", "off")
            before = set(Path(tmp).glob("out*"))
            vgdb("dump", name.replace(" ", "_"))
            dumped = sorted(set(Path(tmp).glob("out*")) - before)
            total = sum(int(n) for f in dumped for n in re.findall(r"^totals: (\d+)", f.read_text(), re.M))
            for f in dumped:  # kept for callgrind_annotate when asked
                f.rename(Path(keep) / f"{name.replace(' ', '_')}.out") if keep else f.unlink()
            found[name] = total / units
            run.stdin.write("\n")
            run.stdin.flush()
        run.communicate(timeout=600)
    return found


def main() -> None:
    if sys.argv[1:2] == ["--measured"]:
        measured(int(sys.argv[2]))
        return
    if shutil.which("valgrind") is None or shutil.which("vgdb") is None:
        print("bench.document_instructions needs valgrind (vgdb): not installed here")
        return
    keep = os.environ.get("BATON_BENCH_CALLGRIND_KEEP")  # a folder: each part's profile left there
    for name, per in counted(int(sys.argv[1]) if len(sys.argv) > 1 else 200, keep).items():
        print(f"{name:>16}: {per / 1e3:8.0f} K instructions")


if __name__ == "__main__":
    main()
