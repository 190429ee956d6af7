"""Callbacks under a kill -9 loop of the module (docs/design/callbacks.md, "Crash safety"): the
guide's `tickets` module is killed with SIGKILL and started again, over and over, while the other
system (this test) answers every token the commands give out, each after a lag of its own: some
while the command still runs (kept), some while the step waits, some while the module is down,
some after the attempt that gave the token out was lost with its module (refused 410; its retry
gives out a new token).

No callback is lost and none is applied twice: every task ends SUCCESS; exactly one callback of
each task was taken (succeeded, or kept and then applied), and it is the one whose output the
task holds; every other answer was a 410 for a token of an attempt that ended; the step's
history says it succeeded once."""

from __future__ import annotations

import random
import signal
import threading
import time

import pytest

from tests.deploy.support import http, wait_task_final
from tests.support.callback_commands import board_file
from tests.support.callback_deployment import GUIDE_FLOWS, callback_deployment

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

# The guide's flows, with a retry for each attempt a kill may lose (its step's command is killed
# before the board took its change) and a shorter wait.
FLOWS = GUIDE_FLOWS.replace("open_change, retry: 1}", "open_change, retry: 8}").replace("default: 14400", "default: 600")
assert FLOWS.count("retry: 8}") == 1 and "default: 600}" in FLOWS
TASKS = 10
HELD = "change 0"  # its first command waits for its answer: one callback kept while the command runs
KILLS = 6


def test_no_callback_is_lost_or_applied_twice_while_the_module_is_killed(rabbitmq_url, tmp_path, request):
    with callback_deployment(tmp_path, rabbitmq_url, request, FLOWS, board_delay=1, board_hold=HELD) as (cluster, base):
        down = threading.Event()
        stop = threading.Event()
        answers: list[tuple[str, int, int, str, bool]] = []  # task, token's index, status, state or reason, module down

        def killer() -> None:
            rng = random.Random(35)
            for _ in range(KILLS):
                time.sleep(rng.uniform(0.8, 2.5))
                down.set()
                cluster.kill("tickets", signal.SIGKILL)
                time.sleep(rng.uniform(0.5, 1.5))  # callbacks go on meanwhile
                cluster.restart("tickets")
                down.clear()

        def other_system(task_ids: list[str]) -> None:
            rng = random.Random(7)
            seen: dict[tuple[str, int], float] = {}  # a token -> when to answer it
            while not stop.is_set():
                for task_id in task_ids:
                    path = board_file(f"{task_id}:1:normal")
                    tokens = path.read_text().split() if path.is_file() else []
                    for index, token in enumerate(tokens):
                        held = task_id == task_ids[0] and index == 0
                        due = seen.setdefault((task_id, index), time.monotonic() + (0 if held else rng.uniform(0.0, 5.0)))
                        if due is None or time.monotonic() < due:
                            continue
                        seen[(task_id, index)] = None  # type: ignore[assignment]  answered once, never again
                        was_down = down.is_set()
                        status, body = http("POST", f"{base}/api/v1/callbacks/{token}",
                                            {"action": "succeed", "output": {"answered": f"{task_id}:{index}"}},
                                            token=None)  # fmt: skip
                        said = body.get("state") if status == 200 else body["error"]["message"]
                        answers.append((task_id, index, status, said, was_down))
                        if held:
                            board_file(f"{task_id}:1:normal").with_suffix(".answered").touch()
                time.sleep(0.05)

        task_ids = []
        for n in range(TASKS):
            status, created = http("POST", f"{base}/api/v1/tasks", {"task_type": "change",
                                                                   "parameters": {"summary": f"change {n}"}})
            assert status == 201, created
            task_ids.append(created["task_id"])
        threads = [threading.Thread(target=killer), threading.Thread(target=other_system, args=(task_ids,))]
        for thread in threads:
            thread.start()
        threads[0].join(timeout=600)
        finals = {task_id: wait_task_final(base, task_id, timeout=240) for task_id in task_ids}
        stop.set()
        threads[1].join(timeout=60)

        for task_id, final in finals.items():
            assert final["TaskStatusName"] == "SUCCESS", (task_id, final["TaskMessage"], cluster.logs()[-3000:])
            mine = [a for a in answers if a[0] == task_id]
            taken = [a for a in mine if a[2] == 200]
            assert len(taken) == 1 and taken[0][3] in ("succeeded", "kept"), mine
            assert final["Parameters"]["answered"] == f"{task_id}:{taken[0][1]}", (final["Parameters"], mine)
            refused = [a for a in mine if a[2] != 200]
            assert all(a[2] == 410 for a in refused), refused  # a lost attempt's token, never a 404 or a repeat
            succeeded = [e for e in final["History"] if e["Event"] == "step_succeeded" and e["Cursor"] == 1]
            assert len(succeeded) == 1, succeeded
            assert final["Steps"][2]["State"] == "succeeded"
        kinds = {(a[3] if a[2] == 200 else a[2]) for a in answers}
        assert "kept" in kinds and "succeeded" in kinds, answers  # while running, and while waiting
        assert any(a[4] and a[2] == 200 for a in answers), "no callback was taken while the module was down"
        by_sweeper = sum(1 for final in finals.values() for e in final["History"]
                         if e["Event"] == "step_succeeded" and e["Cursor"] == 1 and e["Actor"] == "sweeper")
        print(f"callbacks: {len(answers)} sent, taken succeeded {sum(a[3] == 'succeeded' for a in answers)}, "
              f"kept {sum(a[3] == 'kept' for a in answers)}, refused 410 {sum(a[2] == 410 for a in answers)}, "
              f"taken while the module was down {sum(a[4] and a[2] == 200 for a in answers)}; "
              f"kept answers applied by the sweeper after a kill: {by_sweeper}")
