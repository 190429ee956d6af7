"""docs/guide/modules.md "Fencing": its grow_volume example, run through the command runner's own execute
(common/runtime/child.py) against a real task document: a tombstone refuses it, a stale token
refuses it before the effect, and a current one lets it grow the volume. The page leaves
the lock, the tombstone and the effect to the reader: they are stand-ins here."""

from __future__ import annotations

import contextlib

from common.errors import CommandFailed
from common.runtime.child import execute
from common.runtime.registry import CommandContext, CommandRegistry
from tests.support.builders import make_step
from tests.support.doc_examples import blocks
from tests.unit.test_graph_transitions import new, start


def fenced_command(tombstones: set[str], grown: list[str]) -> CommandRegistry:
    (code,) = blocks("docs/guide/modules.md", "Fencing: a command that outlives its claim", "python")
    registry = CommandRegistry("storage")
    namespace = {"registry": registry, "CommandContext": CommandContext, "CommandFailed": CommandFailed,
                 "name": "vol1", "volume_lock": lambda name: contextlib.nullcontext(),
                 "tombstone_exists": tombstones.__contains__, "grow": grown.append}
    exec(code, namespace)  # noqa: S102 - the docs' own example
    return registry


def request(task, dispatch_id: str, owner: str) -> dict:
    return {"task_id": task.TaskId, "task_type": "t", "command": "grow_volume", "cursor": 0, "phase": 0,
            "attempt": 1, "idempotency_key": f"{task.TaskId}:0:normal", "run_key": task.TaskId, "parameters": {},
            "dispatch_id": dispatch_id, "owner": owner}


def test_the_docs_fenced_command_grows_only_while_its_attempt_is_current() -> None:
    claimed, msg = start(new([make_step("grow")], task_id="fv"), 0)  # claimed by worker "w"
    tombstones: set[str] = set()
    grown: list[str] = []
    registry = fenced_command(tombstones, grown)
    current = execute(registry, request(claimed, msg.DispatchId, "w"), False, read_task=lambda _: claimed)
    assert current["ok"] and grown == ["vol1"]
    stale = execute(registry, request(claimed, msg.DispatchId, "another-worker"), False, read_task=lambda _: claimed)
    assert not stale["ok"] and not stale["retryable"] and "stale" in stale["message"] and grown == ["vol1"]
    tombstones.add(claimed.TaskId)  # the undo wrote it before removing anything
    undone = execute(registry, request(claimed, msg.DispatchId, "w"), False, read_task=lambda _: claimed)
    assert not undone["ok"] and undone["message"] == "rolled back; not growing it again" and grown == ["vol1"]

