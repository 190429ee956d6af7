"""bench/thread_split.py and bench/tracing_split.py: a process's CPU time by thread, each thread
known by its name in the kernel (bench/thread_names)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

from bench.thread_split import ThreadMeter, machine_ticks
from bench.tracing_split import THREAD_NAMES, kind


def test_a_process_started_with_thread_names_names_its_threads_in_the_kernel():
    script = ("import os, threading, time\n"
              "t = threading.Thread(target=time.sleep, args=(2,), name='OtelBatchSpanRecordProcessor'); t.start()\n"
              "time.sleep(0.1)\n"
              "print(sorted(open(f'/proc/{os.getpid()}/task/{tid}/comm').read().strip()"
              " for tid in os.listdir(f'/proc/{os.getpid()}/task')))\n")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(THREAD_NAMES), os.environ.get("PYTHONPATH", "")])}
    shown = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert "'OtelBatchSpanRe'" in shown  # the kernel keeps 15 characters


def test_the_meter_charges_a_thread_s_cpu_time_and_switches_to_its_role_and_name():
    spun, stop = threading.Event(), threading.Event()

    def spin() -> None:
        deadline = time.thread_time() + 0.3
        while time.thread_time() < deadline:
            pass
        spun.set()
        stop.wait(60)

    meter = ThreadMeter({"here": lambda: [os.getpid()]})
    meter.start()
    worker = threading.Thread(target=spin, daemon=True)
    worker.start()
    assert spun.wait(60)
    spent = meter.stop()  # before the thread ends: an ended thread's figures leave with it
    stop.set()
    worker.join()
    assert sum(use.user + use.system for name, use in spent.items() if name.startswith("here/")) >= 0.2
    assert all(use.voluntary >= 0 and use.involuntary >= 0 for use in spent.values())


def test_threads_are_grouped_by_kind():
    assert kind("module/OtelBatchSpanRe") == "module: span exporter"
    assert kind("module/baton-store_3") == "module: store pool"
    assert kind("module/baton-rabbit-my") == "module: broker client"
    assert kind("module/baton-lease") == "module: other threads"
    assert kind("child/python") == "command children"
    assert kind("RabbitMQ/1_scheduler") == "RabbitMQ"


def test_the_machine_s_busy_time_grows():
    busy, _ = machine_ticks()
    deadline = time.thread_time() + 0.1
    while time.thread_time() < deadline:
        pass
    assert machine_ticks()[0] > busy


def test_the_speed_probe_times_its_pieces_until_its_input_closes():
    from tests.support.cluster import REPO

    shown = subprocess.run([sys.executable, "-m", "bench.speed_probe"], input="", capture_output=True, text=True,
                           cwd=REPO, check=True, timeout=60).stdout  # fmt: skip
    assert float(shown) > 0
