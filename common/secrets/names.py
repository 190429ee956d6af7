"""Which names hold a secret.

A parameter or output key is secret when it is named like one (`SECRET_KEY`: masked wherever a
task is shown or logged, at any depth, declared or not). In the raw flows data, a name is secret
too when its task type declares it `secret: true`; a `for_each` step's `item` is secret when its
list is: the checks that keep one from being shown (a lock key) or passed on as plain (a
sub-flow's inputs) ask `secret_name` and `secret_source`.
"""

from __future__ import annotations

import re
from typing import Any

# The names, also read by the free-text masks (common.secrets.free_text). A key is written
# as code writes it (api_key), as a header does (Api-Key) or as one word (apikey).
SECRET_NAMES = r"pass(?:word)?|pwd|secret|token|credential|(?:api|private|access)[_-]?key"
SECRET_KEY = re.compile(SECRET_NAMES, re.IGNORECASE)


def named_like_secret(key: Any) -> bool:
    """Whether a key is named like a secret (SECRET_KEY), remembered for a plain string: a task's
    and a log line's keys are a few dozen names, looked at for every step and every line."""
    if type(key) is not str:
        return isinstance(key, str) and bool(SECRET_KEY.search(key))
    verdict = KEY_VERDICTS.get(key)
    if verdict is None:
        verdict = bool(SECRET_KEY.search(key))
        if len(KEY_VERDICTS) < KEY_VERDICTS_MAX:
            KEY_VERDICTS[key] = verdict
    return verdict


# Verdicts on the keys seen, by named_like_secret and read in place by the walks of every log
# line and task (common.secrets.documents, values): one dict for all. Bounded, since keys also
# come from data (a parameter's dict): past the bound a key is searched every time.
KEY_VERDICTS: dict[str, bool] = {}
KEY_VERDICTS_MAX = 4096


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
