"""Step transitions with tracing on (every span exported over OTLP/HTTP to a receiver on this
machine) beside tracing off, in the same run; and what the tracing hooks cost a step while off.

The same cluster as bench/engine.py (one process per module, SQLite, no-op commands), started
once per setting, in rounds of one run each (off then on, then on then off, ...), each run's
tasks queued while its modules are paused: the median of the rounds' on/off ratios, for the
transitions/s and the modules' CPU per transition, with where that CPU went by kind of thread
(bench/tracing_split.py) and how fast this process submitted. Then the verdict: an untraced and
a traced cluster running at once (bench/tracing_paired.py), which meet the same load where runs
one after the other, even moments apart, may not. The receiver takes the exporters' requests
and counts them without decoding (a collector would run elsewhere). With tracing on, the
submissions of this process carry a trace too (its own provider, switched in for those runs only).

Two measures of a step's own tracing work, alone in this process and in CPU time, so that they
hold on a loaded machine where the cluster's figures move by tens of percent: the hooks a step
calls while on, and the encoding of its spans into an OTLP request (baton's encoder, and the
SDK's for the same spans).
"""

from __future__ import annotations

import os
import statistics
import time
import timeit
from contextlib import ExitStack
from pathlib import Path

from bench.engine import FLOWS, MODULES, STEPS, _module_pids, throughput, wait_all
from bench.procstat import CpuMeter, descendants, listening_pid
from bench.tracing_paired import paired_rows, paused
from bench.tracing_split import THREAD_NAMES, measured, split_rows
from bench.submission_tracing import submissions_traced, tracing_off
from tests.support.cluster import Cluster
from tests.support.otlp_receiver import OtlpReceiver

SETTINGS = ("off", "on")


def tracing_rows(workdir: Path, amqp_url: str, tasks: int, rounds: int = 4,
                 paired_rounds: int = 3) -> list[tuple[str, str, str]]:  # fmt: skip
    """Rounds of one run off and one on, in turn first (off, on; on, off; ...): each round's
    on/off ratio compares runs taken moments apart, the median ratio over the rounds, where the
    best run of each would compare moments a load change may separate; where the CPU time went,
    by thread. Then the verdict: `paired_rounds` rounds of an untraced and a traced cluster
    running at once (bench/tracing_paired.py), which meet the same load."""
    receiver = OtlpReceiver(decode=False).start()
    rates: dict[str, list[float]] = {setting: [] for setting in SETTINGS}
    cpu: dict[str, list[float]] = {setting: [] for setting in SETTINGS}
    splits: dict[str, list[dict]] = {setting: [] for setting in SETTINGS}
    submits: dict[str, list[float]] = {setting: [] for setting in SETTINGS}
    try:
        for round_ in range(rounds):
            for setting in SETTINGS if round_ % 2 == 0 else reversed(SETTINGS):
                rate, spent, split, submit_rate = _one_run(workdir / f"{setting}-{round_}", amqp_url, setting, tasks, receiver)
                splits[setting].append(split)
                rates[setting].append(rate)
                cpu[setting].append(spent)
                submits[setting].append(submit_rate)
        paired = paired_rows(workdir, tasks, paired_rounds, receiver) if paired_rounds else []
    finally:
        receiver.stop()
    rate_ratios = [on / off for on, off in zip(rates["on"], rates["off"])]
    cpu_ratios = [on / off for on, off in zip(cpu["on"], cpu["off"])]
    runs = f"median of {rounds} alternating rounds; {tasks} tasks queued first, 1 process per module"
    rows = []
    for setting in SETTINGS:
        label = "tracing on (OTLP/HTTP to a local receiver)" if setting == "on" else "tracing off"
        each_rate = ", ".join(f"{rate:.0f}" for rate in rates[setting])
        each_cpu = ", ".join(f"{ms:.2f}" for ms in cpu[setting])
        rate_note = f"{runs} ({each_rate})"
        cpu_note = f"module processes and children; each round: {each_cpu}"
        if setting == "on":
            rate_note = (f"{statistics.median(rate_ratios):.0%} of off (median of the rounds' ratios: "
                         f"{', '.join(f'{r:.0%}' for r in rate_ratios)}); {receiver.requests} export requests; {rate_note}")
            cpu_note = (f"{statistics.median(cpu_ratios) - 1:+.0%} on off (median of the rounds': "
                        f"{', '.join(f'{r - 1:+.0%}' for r in cpu_ratios)}); {cpu_note}")
        rows.append((f"baton, {label}: step transitions", f"{statistics.median(rates[setting]):.0f} /s", rate_note))
        rows.append((f"baton, {label}: module CPU per transition", f"{statistics.median(cpu[setting]):.2f} ms", cpu_note))
    submit_ratios = [on / off for on, off in zip(submits["on"], submits["off"])]
    rows.append(("this process's submissions (OSS's work), tracing off → on", f"{statistics.median(submits['off']):.0f} → "
                 f"{statistics.median(submits['on']):.0f} tasks/s", "the modules paused meanwhile; the receiver in this "
                 f"process too; the rounds' ratios: {', '.join(f'{r:.0%}' for r in submit_ratios)}"))  # fmt: skip
    rows.extend(split_rows(splits))
    rows.extend(paired)
    rows.append(_off_cost_row())
    rows.extend(_on_cost_rows())
    return rows


def start_cluster(workdir: Path, amqp_url: str, setting: str, receiver: OtlpReceiver) -> Cluster:
    """The engine benchmark's cluster, its modules tracing to `receiver` if `setting` is "on"."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = {"BATON_FAULT_INJECTION": "0"}
    if setting == "on":
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    cluster = Cluster(workdir, amqp_url, FLOWS, extra_env=env)
    try:
        for module in MODULES:
            # Each thread named in the kernel too, for the split by thread (bench/tracing_split.py).
            cluster.start_module(module, name=f"{module}-{setting}", PYTHONPATH=str(THREAD_NAMES))
    except BaseException:
        cluster.stop_all()
        raise
    return cluster


def _one_run(workdir: Path, amqp_url: str, setting: str, tasks: int,
             receiver: OtlpReceiver) -> tuple[float, float, dict, float]:  # fmt: skip
    """(transitions/s, module CPU ms per transition, the split of bench/tracing_split.py, tasks
    submitted per second by this process)."""
    cluster = start_cluster(workdir, amqp_url, setting, receiver)
    try:
        with submissions_traced(receiver if setting == "on" else None):
            throughput(cluster, min(200, tasks))  # warm-up: imports, caches, queues
            pids = _module_pids(cluster)
            meter = CpuMeter({"modules": lambda: pids, "children": lambda: descendants(pids)})
            with ExitStack() as window:
                # The whole backlog queued first: the submitting (this process) does not pace the
                # modules (bench/tracing_paired.py says why that matters).
                with paused(pids):
                    started = time.perf_counter()
                    ids = [cluster.submit("bench").TaskId for _ in range(tasks)]
                    submitted = time.perf_counter() - started
                    split = window.enter_context(measured(lambda: pids, listening_pid(5672), tasks * STEPS))
                    meter.start()
                    started = time.perf_counter()
                wait_all(cluster, ids, timeout=600)
                elapsed = time.perf_counter() - started
                spent = meter.stop()
    finally:
        cluster.stop_all()
    time.sleep(1)
    return tasks * STEPS / elapsed, 1000 * sum(spent.values()) / (tasks * STEPS), split, tasks / submitted


def _off_cost_row() -> tuple[str, str, str]:
    """The calls a step makes into the tracing hooks while tracing is off, timed alone."""
    from common.engine.document import StepMessage
    from common.engine.states import Phase
    from common.tracing import attempts

    message = StepMessage(TaskId="t", Cursor=0, Type=Phase.NORMAL, Module="m", Command="c", Timeout=1, Retry=0,
                          DispatchId="d", Attempt=1)  # fmt: skip

    def one_step() -> None:
        attempt = attempts.begin(message, "m")
        with attempt.current():
            with attempt.child("claim"):
                pass
            attempt.claimed(None)  # type: ignore[arg-type]
            attempt.start_command("process")
            attempt.command_traceparent()
            with attempt.in_command():
                pass
        attempt.command_ended(None)
        with attempt.child("commit"):
            pass
        attempt.end(None)

    tracing_off()
    runs = 200_000
    seconds = min(timeit.repeat(one_step, number=runs, repeat=3)) / runs
    return ("tracing off: a step's calls into the tracing hooks", f"{seconds * 1e9:.0f} ns",
            "per step, alone in one process; no span object is made")


def _on_cost_rows() -> list[tuple[str, str, str]]:
    """A step's spans with tracing on, alone in one process (CPU time, best of three): the
    hooks as a step calls them, then the encoding of its spans into an OTLP request, by baton's
    encoder and, for the same spans, by the SDK's. The HTTP request is left out (one per
    batch of 512 steps)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider

    from common.engine.changes import AttemptResult
    from common.engine.document import StepMessage
    from common.engine.states import Phase, ResultCode
    from common.tracing import attempts
    from common.tracing.carrier import TraceContext
    from common.tracing.otlp_encoding import encode_request

    records: list = []

    class Keep:
        on_end = records.append

    trace = TraceContext(TraceParent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                         Link="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01")  # fmt: skip
    result = AttemptResult(ResultCode.OK)

    steps = 512
    messages = [StepMessage(TaskId=f"task-{n:08d}", Cursor=2, Type=Phase.NORMAL, Module="mod", Command="noop",
                            Timeout=30, Retry=0, DispatchId=f"dispatch-{n:08d}", Attempt=1, Trace=trace)
                for n in range(steps)]  # fmt: skip

    def one_step(message: StepMessage) -> None:
        attempt = attempts.begin(message, "mod")
        with attempt.current():
            with attempt.child("claim"):
                pass
            attempt.start_command("async")
            with attempt.in_command():
                pass
            attempt.command_ended(result)
            with attempt.child("commit"):
                pass
        attempt.end(result)

    from common.tracing import step_record
    from common.tracing.setup import install_provider

    install_provider(TracerProvider(), Keep(), step_records=True)
    try:
        hooks = min(timeit.repeat(lambda: [one_step(m) for m in messages], number=1, repeat=3, timer=time.process_time))
        batch = records[-steps:]
        ours = min(timeit.repeat(lambda: encode_request(batch), number=1, repeat=3, timer=time.process_time))
        readable = [span for record in batch for span in step_record.readable(record)]
        theirs = min(timeit.repeat(lambda: encode_spans(readable).SerializePartialToString(), number=1, repeat=3,
                                   timer=time.process_time))  # fmt: skip
    finally:
        tracing_off()
    each = 1e6 / steps
    return [("tracing on: a step's spans, the hooks", f"{hooks * each:.1f} µs", "per step (4 spans), alone in one process"),
            ("tracing on: a step's spans, OTLP encoding", f"{ours * each:.1f} µs",
             f"per step; the SDK's encoder for the same spans: {theirs * each:.1f} µs")]


if __name__ == "__main__":  # these rows alone: python -m bench.tracing
    import tempfile

    from common.logging import configure_logging
    from tests.support.vhosts import rabbitmq_vhost

    configure_logging(level="warning")
    with rabbitmq_vhost("baton-bench-tracing") as url, tempfile.TemporaryDirectory() as tmp:
        found = tracing_rows(Path(tmp), url, int(os.environ.get("BATON_BENCH_TRACING_TASKS", "1000")),
                             int(os.environ.get("BATON_BENCH_TRACING_ROUNDS", "4")),
                             int(os.environ.get("BATON_BENCH_TRACING_PAIRED_ROUNDS", "3")))
    for name, value, note in found:
        print(f"  {name:<66}  {value:>12}  {note}")
