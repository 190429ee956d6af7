"""Small builders for task documents in tests."""

from __future__ import annotations

import itertools

from common.engine.document import BackoffPolicy, Step


def make_step(name: str, module: str = "mod", rollback: bool = True, retry: int = 0, timeout: float = 5) -> Step:
    return Step(
        Name=name,
        NormalModule=module,
        NormalCommand=f"do_{name}",
        NormalTimeout=timeout,
        NormalRetry=retry,
        NormalBackoff=BackoffPolicy(Initial=1, Max=10, Multiplier=2, Jitter=0),
        RollbackModule=module if rollback else None,
        RollbackCommand=f"undo_{name}" if rollback else None,
        RollbackTimeout=timeout if rollback else None,
        RollbackRetry=retry if rollback else None,
    )


def counter_ids(prefix: str = "id"):
    """A deterministic id factory: id-1, id-2, ..."""
    numbers = itertools.count(1)
    return lambda: f"{prefix}-{next(numbers)}"


def nested(depth: int, leaf: object = 0) -> object:
    """`leaf` inside `depth` lists: [[[0]]] for depth 3 (hostile-input tests)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value
def only_run(task):
    """The one run of a line-shaped task (None once it ended): what format 1 called `Active`."""
    assert len(task.Runs) <= 1, f"expected at most one run, found {len(task.Runs)}"
    return task.Runs[0] if task.Runs else None
