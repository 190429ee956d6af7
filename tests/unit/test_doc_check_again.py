"""docs/guide/modules.md "Check again later" examples, run: the command's answer through the command runner's
own execute (common/runtime/child.py), and the flows.yaml step through the loader."""

from __future__ import annotations

import textwrap

from common.flows import parse_flows
from common.runtime.child import execute
from common.runtime.registry import CommandContext, CommandRegistry
from tests.support.doc_examples import blocks

PAGE = "docs/guide/modules.md"


def _blocks(language: str) -> str:
    return blocks(PAGE, "Check again later: a step that waits", language)[0]


def _request(volume: str) -> dict:
    return {"task_id": "t1", "task_type": "resize", "command": "await_resync", "cursor": 0, "phase": 0,
            "attempt": 1, "idempotency_key": "t1:0:normal", "run_key": "t1", "parameters": {"volume": volume}}


def test_the_docs_command_answers_check_again_until_done() -> None:
    percents = {"v1": 40, "v2": 100}
    registry = CommandRegistry("storage")
    namespace = {"registry": registry, "CommandContext": CommandContext, "resync_percent": percents.__getitem__}
    exec(_blocks("python"), namespace)  # noqa: S102 - the docs' own example
    assert execute(registry, _request("v1"), False) == {
        "ok": True, "message": "resync 40% done", "output": {}, "retryable": True, "check_again": 10.0}
    assert execute(registry, _request("v2"), False)["output"] == {"resynced": True}


def test_the_docs_step_with_max_wait_loads() -> None:
    text = "version: 1\ntask_types:\n  resize:\n    steps:\n" + textwrap.indent(textwrap.dedent(_blocks("yaml")), "      ")
    step = parse_flows(text, "flows.yaml").get("resize").steps[0]
    assert (step.Name, step.MaxWait, step.NormalCommand) == ("await_resync", 3600.0, "await_resync")
