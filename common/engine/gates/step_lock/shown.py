"""How people read a step's lock (common.engine.core.wait_words): a run waiting for it."""

from common.engine.states import RunState


def RUN_WAIT(task, run) -> str | None:  # type: ignore[no-untyped-def]  # noqa: N802 (a declaration)
    if run.State is not RunState.WAITING_LOCK:
        return None
    lock = task.Steps[run.Cursor].Lock
    return "waiting for the step's lock" + (f" (mode {lock.Mode})" if lock is not None and lock.Mode else "")
