"""What a step's log line and log context cost a module, in instructions, alone.

The same calls a module's StepHandler makes around one transition, in one thread and in the same
order: the step's fields bound (task id, step, item, phase, attempt, module, command), its task
type and secret values bound after the claim, the dropped "step started" debug line, the two
copies of the context (the command's, the commit's), and in the commit's copy the task's secret
values again and its "step finished" line, rendered as JSON (production's format), masked and
written (to /dev/null). Two tasks, neither with a secret value: one with a few parameters, and
one with none (bench.instructions' no-op). The work of the claim and the commit themselves is not
here (bench.instructions counts a whole transition).

Counted by valgrind's callgrind for a small and a large number of rounds: the difference per
round leaves out the start and the exit. About a minute:
    python -m bench.step_log_instructions [small large]   (default 200 1200)
    python -m bench.step_log_instructions --time [rounds]  (CPU time, no valgrind: noisy)
"""

from __future__ import annotations

import contextvars
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.callgrind_run import counted_run


def _task(parameters: bool = True) -> Any:
    """A task as far as its secrets go: a few parameters, none secret (most tasks), or none."""
    given = {"host": "db-17.internal", "size": 3, "tags": ["a", "b"], "options": {"verbose": True}} if parameters else {}
    return SimpleNamespace(Parameters=given, SubmittedParameters=dict(given), SecretParameters=[])


def step_rounds(rounds: int, parameters: bool = True) -> None:
    """`rounds` steps' logging and log context, as StepHandler does them."""
    from common.logging import HotPathLogger, bound_fields
    from common.secrets.log_lines import hidden_values
    from common.secrets.values import secret_values

    log = HotPathLogger("common.runtime.step_handler")
    task = _task(parameters)

    def finish(step: int) -> None:
        with hidden_values(secret_values(task)):
            log.info("step finished", ok=True, code="OK", error=None, seconds=0.0012, task_status="RUNNING")

    for step in range(rounds):
        with bound_fields(task_id="0f3c2a51-8e4b-4d7a-9c1e-5b2f6a7d8e90", step=step % 3, item=None, phase="normal",
                          attempt=1, module="asyncbench", command="noop"):  # fmt: skip
            hidden = secret_values(task)
            with bound_fields(task_type="async_noop"), hidden_values(hidden):
                log.debug("step started")
                finish_in = contextvars.copy_context()
                contextvars.copy_context()  # the command's
                finish_in.run(finish, step)


def _counted_process(rounds: int, parameters: bool, control: Path) -> None:
    from common.logging import configure_logging

    configure_logging("json", "info")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    step_rounds(20, parameters)  # imports and first-use caches, before the count
    (control / "ready.part").write_text(str(os.getpid()))
    (control / "ready.part").rename(control / "ready")
    while not (control / "go").exists():
        time.sleep(0.05)
    step_rounds(rounds, parameters)


def counted(rounds: int, parameters: bool) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        control = Path(tmp)
        program = [sys.executable, "-m", "bench.step_log_instructions", "--rounds", str(rounds), str(int(parameters)),
                   str(control)]  # fmt: skip
        return counted_run(program, control)


def per_step(small: int = 200, large: int = 1200, parameters: bool = True) -> float:
    return (counted(large, parameters) - counted(small, parameters)) / (large - small)


def main() -> None:
    if sys.argv[1:2] == ["--rounds"]:
        _counted_process(int(sys.argv[2]), sys.argv[3] == "1", Path(sys.argv[4]))
        return
    if sys.argv[1:2] == ["--time"]:
        from common.logging import configure_logging

        rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
        configure_logging("json", "info")
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        step_rounds(100)
        started = time.process_time()
        step_rounds(rounds)
        print(f"{(time.process_time() - started) / rounds * 1e6:.1f} µs of CPU a step's log line and context",
              file=sys.stdout)  # fmt: skip
        return
    if shutil.which("valgrind") is None or shutil.which("vgdb") is None:
        print("bench.step_log_instructions needs valgrind (vgdb): not installed here")
        return
    small, large = (int(n) for n in sys.argv[1:3]) if len(sys.argv) >= 3 else (200, 1200)
    for parameters, task in ((True, "a task of 4 parameters"), (False, "a task without parameters")):
        print(f"a step's log line and log context, {task}: {per_step(small, large, parameters) / 1e3:.1f} k "
              f"instructions ({small} and {large} rounds)")


if __name__ == "__main__":
    main()
