"""Fault injection for tests and drills: make a chosen command fail, hang or crash its module.

Honoured only where the module runs with BATON_FAULT_INJECTION=1. A task asks for faults in its
Parameters, so one run can mix healthy and failing tasks:

    "_baton_faults": [
      {"command": "init_instance", "action": "fail"},                       # every attempt fails
      {"command": "deduct_resource", "action": "fail", "times": 1},         # first attempt only
      {"command": "clean_instance", "phase": "rollback", "action": "hang"}, # runs into its timeout
      {"command": "init_instance", "action": "crash", "at": "after_commit"} # SIGKILL the module
      {"command": "add_replica", "item": 1, "action": "fail"},             # one for_each item only
    ]

`times` limits a rule to attempts 1..times (crashes default to the first attempt only, so the
step can finish after the restart).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.flows.parameters import CLIENT_RESERVED
from common.engine.states import Phase

FAULTS_KEY = CLIENT_RESERVED[0]
ACTIONS = frozenset({"fail", "hang", "crash"})
# before_commit: the command ended (its effect made) and the module dies before recording it:
# the outcome the next attempt must verify (docs/design/runtime.md, "Verifying an unknown outcome").
CRASH_POINTS = frozenset({"after_claim", "during_command", "before_commit", "after_commit", "after_publish"})


@dataclass(frozen=True)
class Fault:
    action: str
    at: str | None = None
    retryable: bool = True


class BadFaultRule(ValueError):
    pass


def faults_for(parameters: Mapping[str, Any], command: str, phase: Phase, attempt: int) -> list[Fault]:
    """The faults the task's Parameters ask for on this attempt. Malformed rules raise."""
    rules = parameters.get(FAULTS_KEY) or []
    if not isinstance(rules, list):
        raise BadFaultRule(f"{FAULTS_KEY} must be a list of rules")
    item = parameters.get("item_index")
    return [fault for rule in rules if (fault := _match(rule, command, phase, attempt, item))]


def _match(rule: Any, command: str, phase: Phase, attempt: int, item: Any) -> Fault | None:
    if not isinstance(rule, dict) or rule.get("action") not in ACTIONS or "command" not in rule:
        raise BadFaultRule(f"fault rule {rule!r}: needs 'command' and an action in {sorted(ACTIONS)}")
    action = rule["action"]
    at = rule.get("at", "during_command" if action == "crash" else None)
    if action == "crash" and at not in CRASH_POINTS:
        raise BadFaultRule(f"fault rule {rule!r}: 'at' must be one of {sorted(CRASH_POINTS)}")
    times = rule.get("times", 1 if action == "crash" else None)
    if rule["command"] != command or rule.get("phase", "normal") != phase.label:
        return None
    if "item" in rule and rule["item"] != item:
        return None
    if times is not None and attempt > int(times):
        return None
    return Fault(action=action, at=at, retryable=bool(rule.get("retryable", True)))
