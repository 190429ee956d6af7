"""Which names of the raw flows data hold a secret, for the checks that keep one from being
shown (a lock key) or passed on as plain (a sub-flow's inputs).

A name is secret when the type declares it `secret: true`, or when it is named like a secret
(common.logging.SECRET_KEY: masked wherever a task is shown, in a type without `parameters:`
too); a `for_each` step's `item` is secret when its list is.
"""

from __future__ import annotations

from typing import Any

from common.logging import SECRET_KEY


def secret_name(name: Any, declared: Any) -> bool:
    if not isinstance(name, str):
        return False
    spec = declared.get(name) if isinstance(declared, dict) else None
    return bool(SECRET_KEY.search(name)) or (isinstance(spec, dict) and spec.get("secret") is True)


def secret_source(name: Any, step: dict[str, Any], declared: Any) -> bool:
    """`name` as a step of the type may use it: a parameter, or the step's `item`."""
    if name == "item" and "for_each" in step:
        return secret_name(step["for_each"], declared)
    return secret_name(name, declared)
