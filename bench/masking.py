"""What showing a task with thousands of secret values costs, beside the same task unmasked.

A task whose `accounts` parameter lists BATON_BENCH_SECRET_VALUES (default 5,000) users, each with
a `password`, is masked for an API answer (common.secrets.task_views.masked_task_view): every string left
in the document (the user names, a message) is scrubbed of every password. The baseline is the
same task with the passwords under a plain key, masked the same way in the same run. One process, no store, no broker. `python -m
bench.masking` alone, or part of `make bench`.
"""

from __future__ import annotations

import os
import time

from common.secrets.task_views import masked_task_view
from common.engine.document import Task
from common.engine.changes import Timing, create_task
from bench.engine import FLOWS
from common.flows import parse_flows


def _task(key: str, values: list[str]) -> Task:
    flow = parse_flows(FLOWS).get("bench")
    accounts = [{"user": f"bench-user-{i:06d}", key: value} for i, value in enumerate(values)]
    # A failure message quoting one of them: free text is scrubbed, not only the list's items.
    parameters = {"accounts": accounts, "note": f"connecting with {values[len(values) // 2]} failed"}
    return create_task(task_type="bench", steps=flow.steps, parameters=parameters, timing=Timing(time.time()))


def _best_of(task: Task, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        masked_task_view(task)
        times.append(time.perf_counter() - started)
    return min(times)


def masking_seconds(values: int = 5000, repeats: int = 3) -> dict[str, float]:
    """Seconds to mask the task with `values` secret values, and the same task with a plain key."""
    secrets = [f"bench-secret-{i:06d}" for i in range(values)]
    return {
        "values": values,
        "secret_seconds": _best_of(_task("password", secrets), repeats),
        "plain_seconds": _best_of(_task("plain", secrets), repeats),
    }


if __name__ == "__main__":
    result = masking_seconds(int(os.environ.get("BATON_BENCH_SECRET_VALUES", "5000")))
    print(f"masking a task with {result['values']:,} secret values: {result['secret_seconds'] * 1000:.1f} ms "
          f"(the same task with a plain key: {result['plain_seconds'] * 1000:.1f} ms)")
