"""What tracing costs a module, in CPU instructions: a figure the machine's load does not move.

CPU time per transition on a shared 2-core machine moves by tens of percent from one run to the
next (other processes' caches, the wait for a core); the instructions a process executes for the
same work do not. One module (mysql, of bench/engine.py's three) runs under valgrind's callgrind,
tracing off, then on (exporting over OTLP/HTTP to a receiver in this process); after a warm-up
its counters are turned on for a window of tasks and read at its end, one figure per thread. The
exporter's thread (the batch processor's) is told apart: its cost per step depends on how many
steps each request carries, which under valgrind is a few (a step takes tens of milliseconds),
at full speed hundreds (a request every 5 s or every 512 steps). The command children are
not under callgrind: their CPU time is printed beside.

A second figure, alone in one process: the instructions a step's tracing hooks execute
(begin, the four spans made current in turn, their end and hand-over to the batch processor,
two log lines' trace ids), from the difference between one and three rounds over the same
messages; and a third, the instructions the exporter's thread spends writing a step's spans
into a request (baton's encoder), from one and three rounds of encoding the same records.

Needs valgrind; takes minutes (the module runs some 50 times slower). Not part of `make bench`:
    python -m bench.tracing_instructions       (BATON_BENCH_TRACING_CALLGRIND_TASKS, default 100)
BATON_BENCH_TRACING_CALLGRIND_FUNCTIONS=N also lists the N functions whose own instructions per
step in the module's threads (its exporter's apart) moved most from off to on
(bench/callgrind_functions.py); BATON_BENCH_TRACING_CALLGRIND_KEEP=DIR keeps the profiles there.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.callgrind_functions import differences, print_differences, summed
from bench.engine import FLOWS, MODULES, wait_all
from bench.procstat import descendants, usage
from bench.submission_tracing import submissions_traced
from tests.support.cluster import Cluster
from tests.support.otlp_receiver import OtlpReceiver

TARGET = "mysql"
REPO = Path(__file__).resolve().parents[1]


def module_rows(workdir: Path, amqp_url: str, tasks: int, functions: int = 0) -> list[tuple[str, str, str]]:
    receiver = OtlpReceiver(decode=False).start()
    found: dict[str, tuple[float, float, float]] = {}
    try:
        for setting in ("off", "on"):
            found[setting] = _one_run(workdir / setting, amqp_url, setting, tasks, receiver)
    finally:
        receiver.stop()
    if functions:
        module_threads = {setting: [path for path in glob.glob(f"{workdir / setting / 'callgrind.out'}.1-*")
                                    if not _is_exporter(path)] for setting in ("off", "on")}  # fmt: skip
        print(f"  own instructions per step, the module's threads (its exporter's apart), {tasks} steps:")
        print_differences(differences(summed(module_threads["off"]), summed(module_threads["on"]), tasks, functions))
    (off, _, off_children), (on, exporter, on_children) = found["off"], found["on"]
    steps = f"{tasks} steps of the mysql module"
    return [
        ("tracing off: module instructions per step", f"{off / 1e6:.2f} M", f"{steps}; children {off_children:.2f} ms CPU a step"),
        ("tracing on: module instructions per step, its exporter's thread apart", f"{(on - exporter) / 1e6:.2f} M",
         f"{(on - exporter) / off - 1:+.1%} on off; {steps}; children {on_children:.2f} ms CPU a step"),
        ("tracing on: its exporter's thread, per step", f"{exporter / 1e6:.2f} M",
         "requests of a few steps each under callgrind (of hundreds at full speed)"),
    ]


def _one_run(workdir: Path, amqp_url: str, setting: str, tasks: int, receiver: OtlpReceiver) -> tuple[float, float, float]:
    """(instructions per step of the module, of which its exporter thread, children's CPU ms a step)."""
    workdir.mkdir(parents=True, exist_ok=True)
    # A long lease: a step under callgrind takes far longer than on a bare run.
    env = {"BATON_FAULT_INJECTION": "0", "BATON_LEASE_SECONDS": "120", "BATON_REDELIVER_AFTER_SECONDS": "600"}
    if setting == "on":
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    cluster = Cluster(workdir, amqp_url, FLOWS, extra_env=env)
    out = workdir / "callgrind.out"
    try:
        for module in MODULES:
            if module != TARGET:
                cluster.start_module(module, name=f"{module}-{setting}")
                continue
            command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
                       f"--callgrind-out-file={out}", sys.executable, "-m", f"modules.{module}"]  # fmt: skip
            cluster.start_process(f"{module}-{setting}", command, {}, ready="module started")
        with submissions_traced(receiver if setting == "on" else None):
            _run(cluster, 20)  # warm-up: imports, caches, queues
            pid = cluster.procs[f"{TARGET}-{setting}"].popen.pid
            children = _children_cpu(pid)
            subprocess.run(["callgrind_control", "-i", "on", str(pid)], check=True, capture_output=True)
            subprocess.run(["callgrind_control", "-z", str(pid)], check=True, capture_output=True)
            _run(cluster, tasks)
            subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)
            children = _children_cpu(pid) - children
    finally:
        cluster.stop_all()
    threads = {path: _total(path) for path in glob.glob(f"{out}.1-*")}
    exporter = sum(total for path, total in threads.items() if setting == "on" and _is_exporter(path))
    return sum(threads.values()) / tasks, exporter / tasks, children * 1000 / tasks


def _run(cluster: Cluster, tasks: int) -> None:
    wait_all(cluster, [cluster.submit("bench").TaskId for _ in range(tasks)], timeout=3600)


def _children_cpu(pid: int) -> float:
    return sum(found.cpu_seconds for child in descendants([pid]) if (found := usage(child)) is not None)


def _total(path: str) -> int:
    match = re.search(r"^summary: (\d+)", Path(path).read_text(), re.MULTILINE)
    return int(match.group(1)) if match else 0


def _is_exporter(path: str) -> bool:
    """The thread that wrote OTLP requests: the only one to run baton's encoder, which packs
    each span's times with struct and grows its request with bytearray concatenation."""
    text = Path(path).read_text()
    return "bytearray_iconcat" in text and "s_pack" in text


HOOKS = """
import os
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from common.engine.changes import AttemptResult
from common.engine.document import StepMessage
from common.engine.states import Phase, ResultCode
from common.tracing import attempts
from common.tracing.carrier import TraceContext
from common.tracing.log_fields import add_trace_ids
from common.tracing.scrub import ScrubbingProcessor
from common.tracing.setup import install_provider

class Kept(SpanExporter):  # exports nothing: the batch processor's queue is what a step feeds
    def export(self, spans):
        return 0

processor = ScrubbingProcessor([BatchSpanProcessor(Kept(), max_queue_size=10**7, max_export_batch_size=10**6,
                                                   schedule_delay_millis=10**7)])
trace = TraceContext(TraceParent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                     Link="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01")
result = AttemptResult(ResultCode.OK)
messages = [StepMessage(TaskId=f"task-{n:08d}", Cursor=2, Type=Phase.NORMAL, Module="mod", Command="noop", Timeout=30,
                        Retry=0, DispatchId=f"dispatch-{n:08d}", Attempt=1, Trace=trace) for n in range(1000)]

def one_step(message):
    attempt = attempts.begin(message, "mod")
    with attempt.current():
        with attempt.child("claim"):
            add_trace_ids(None, "", {})
        attempt.start_command("process")
        attempt.command_traceparent()
        with attempt.in_command():
            pass
        attempt.command_ended(result)
        with attempt.child("commit"):
            add_trace_ids(None, "", {})
    attempt.end(result)

install_provider(TracerProvider(), processor, step_records=True)
for _ in range(int(os.environ["ROUNDS"])):
    for message in messages:
        one_step(message)
"""


def hooks_row(workdir: Path) -> tuple[str, str, str]:
    per_step = _per_step(workdir, "hooks", HOOKS)
    return ("tracing on: a step's hooks, alone in one process", f"{per_step / 1e3:.0f} k",
            "instructions a step (4 spans made current, ended, queued; 2 log lines' ids)")


def _per_step(workdir: Path, name: str, code: str) -> float:
    """Instructions per step of `code` under callgrind: one round against three of its 1,000
    steps, so that the imports and the set-up cancel out."""
    script = workdir / f"{name}.py"
    script.write_text(code)
    totals = []
    for rounds in (1, 3):
        out = workdir / f"{name}-{rounds}.out"
        env = {**os.environ, "ROUNDS": str(rounds), "PYTHONPATH": str(REPO)}
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, str(script)],
                       env=env, check=True, capture_output=True)  # fmt: skip
        totals.append(_total(str(out)))
    return (totals[1] - totals[0]) / 2000


ENCODING = HOOKS.replace("for _ in range(int(os.environ[\"ROUNDS\"])):", "for _ in range(1):") + """
from common.tracing import state
from common.tracing.otlp_encoding import encode_request

kept = []
state.emit_steps = kept.append
for message in messages:
    one_step(message)
for _ in range(int(os.environ["ROUNDS"])):
    for start in range(0, len(kept), 500):
        encode_request(kept[start:start + 500])
"""


def encoding_row(workdir: Path) -> tuple[str, str, str]:
    """The instructions the exporter's thread spends writing a step's spans into a request
    (requests of 500 steps, each a new task: its id written, not found kept)."""
    per_step = _per_step(workdir, "encoding", ENCODING)
    return ("tracing on: writing a step's spans into a request, alone in one process", f"{per_step / 1e3:.0f} k",
            "instructions a step (its four spans' OTLP bytes, in requests of 500 steps)")


if __name__ == "__main__":
    from common.logging import configure_logging
    from tests.support.vhosts import rabbitmq_vhost

    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("needs valgrind (callgrind and callgrind_control)")
    configure_logging(level="warning")
    tasks = int(os.environ.get("BATON_BENCH_TRACING_CALLGRIND_TASKS", "100"))
    functions = int(os.environ.get("BATON_BENCH_TRACING_CALLGRIND_FUNCTIONS", "0"))
    keep = os.environ.get("BATON_BENCH_TRACING_CALLGRIND_KEEP")
    started = time.monotonic()
    with rabbitmq_vhost("baton-bench-tracing-instr") as url, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(keep) if keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        rows = [hooks_row(workdir), encoding_row(workdir), *module_rows(workdir, url, tasks, functions)]
    for name, value, note in rows:
        print(f"  {name:<70}  {value:>10}  {note}")
    print(f"  ({time.monotonic() - started:.0f} s)")
