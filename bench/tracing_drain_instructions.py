"""What tracing costs a transition, in instructions, with the in-process broker.

bench/tracing_instructions.py counts a module of the real cluster, pika's threads included. Here
the work is bench.instructions' drain (one module process, the in-process broker, SQLite, async
no-op three-step tasks) with tracing off, then on (the submissions and every step traced,
exported over OTLP/HTTP to a receiver in this process), counted by callgrind for a small and a
large number of tasks: the difference per transition leaves out what does not grow with the
tasks. What runs as often as the clock says (the runtime's timers, the drain's watcher, a full
garbage collection falling in the window or not) still moves the figures with how long a run
takes: by a few percent between runs side by side, by a fifth when the machine's load changes
between them. Take on and off from the same run, and repeat; the function list says more than
the totals (the work tracing adds shows in each run alike). The exporter sends a request per
512 steps' spans, as at full speed (not every 5 s: a step under valgrind is fifty times slower);
a drain of either size ends with one, so the figure leaves out a request's own cost (about 5 M
instructions, some 10 k a step), its encoding not.

    python -m bench.tracing_drain_instructions [small large]     (default 40 160; minutes)
BATON_BENCH_TRACING_CALLGRIND_FUNCTIONS=N also lists the N functions whose own instructions per
transition moved most from off to on (bench/callgrind_functions.py, the large runs);
BATON_BENCH_TRACING_CALLGRIND_KEEP=DIR keeps those two profiles there (off.out, on.out).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench.callgrind_functions import differences, own_instructions, print_differences
from bench.instructions import STEPS, counted
from tests.support.otlp_receiver import OtlpReceiver


def drain_rows(small: int = 40, large: int = 160, functions: int = 0) -> list[tuple[str, str, str]]:
    receiver = OtlpReceiver(decode=False).start()
    per: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            profiles = {setting: Path(tmp) / f"{setting}.out" for setting in ("off", "on")}
            for setting in ("off", "on"):
                endpoint = receiver.endpoint if setting == "on" else None
                few = counted(small, endpoint)
                many = counted(large, endpoint, keep=profiles[setting])
                per[setting] = (many - few) / ((large - small) * STEPS)
            if functions:
                print(f"  own instructions per transition, {large} tasks, off and on:")
                found = {setting: own_instructions(str(path)) for setting, path in profiles.items()}
                print_differences(differences(found["off"], found["on"], large * STEPS, functions))
            keep = os.environ.get("BATON_BENCH_TRACING_CALLGRIND_KEEP")
            if keep:
                Path(keep).mkdir(parents=True, exist_ok=True)
                for path in profiles.values():
                    shutil.copy(path, Path(keep) / path.name)
    finally:
        receiver.stop()
    tasks = f"{small} and {large} three-step tasks, one module process, in-process broker"
    return [
        ("tracing off: instructions per transition", f"{per['off'] / 1e6:.3f} M", tasks),
        ("tracing on: instructions per transition, its exporter included", f"{per['on'] / 1e6:.3f} M",
         f"{per['on'] / per['off'] - 1:+.1%} on off; its spans' encoding included, the request's own cost not"),
    ]


if __name__ == "__main__":
    if shutil.which("valgrind") is None or shutil.which("vgdb") is None:
        sys.exit("needs valgrind (callgrind and vgdb)")
    small, large = (int(n) for n in sys.argv[1:3]) if len(sys.argv) >= 3 else (40, 160)
    functions = int(os.environ.get("BATON_BENCH_TRACING_CALLGRIND_FUNCTIONS", "0"))
    for name, value, note in drain_rows(small, large, functions):
        print(f"  {name:<66}  {value:>10}  {note}")
