"""What the resource commands read from a task's Parameters: pure, no I/O.

One claim per run of a task: every step names its claim by the task's run key (its id, plus the
generation once an operator restarted it), so the rollback of any step can give it back without depending on what an earlier step managed to write into Parameters
(a step that failed after reserving wrote nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.errors import CommandFailed
from common.instance_names import BadInstanceName, check_instance_name
from modules.resource.inventory.port import Capacity, Claim

# The same defaults as the parameters of create_mysql_instance in flows.yaml: a task submitted
# before parameter checking fills them in gets the same amounts.
DEFAULT_NEED = Capacity(cpu=1, memory_mb=1024, storage_gb=10)


def claim_key(run_key: str) -> str:
    return f"task:{run_key}"


def need_from(parameters: Mapping[str, Any]) -> Capacity:
    values = {}
    for field, default in DEFAULT_NEED.as_dict().items():
        value = parameters.get(field, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CommandFailed(f"parameter {field} must be a whole number >= 0 (got {value!r})", retryable=False)
        values[field] = value
    return Capacity(**values)


def holder_from(parameters: Mapping[str, Any]) -> str:
    try:
        return check_instance_name(parameters.get("name"))
    except BadInstanceName as exc:
        raise CommandFailed(str(exc), retryable=False) from None


def summary(claim: Claim) -> dict[str, Any]:
    """What goes into Parameters: enough for later steps and for a person reading the task."""
    return {
        "id": claim.key,
        "host": claim.host,
        "state": claim.state.value,
        **claim.need.as_dict(),
        "expires_at": claim.expires_at,
    }
