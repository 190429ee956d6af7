"""Free text an operator writes (a drain's or an action's reason) as it is stored, logged and
shown: a URL's password masked, and so is a value written after a name that looks secret
(`password=hunter2`, `token: abc`, `api_key="..."`). Such a text belongs to no task (a module
drain) or quotes more than the task's declared secrets, so the task's secret values alone
(common.secrets.documents.scrubbed_text) cannot know what to hide in it.

Linear in the text: the name's tail and the spaces around the sign are bounded, so no match
restarts over a long run of letters.
"""

from __future__ import annotations

import re

from common.secrets.names import SECRET_NAMES
from common.secrets.scrubber import MASK
from common.secrets.urls import mask_url_passwords

# A secret-looking name (common.secrets.names.SECRET_KEY, with a short tail: db_password,
# token.v2), "=" or ":", then the value: quoted, or up to the next space, comma or semicolon.
_ASSIGNED = re.compile(
    rf"((?:{SECRET_NAMES})[\w.-]{{0,32}}\s{{0,3}}[=:]\s{{0,3}})"
    r"(\"[^\"]*\"|'[^']*'|[^\s,;]+)",
    re.IGNORECASE,
)


def masked_free_text(text: str) -> str:
    """`text` with URL passwords and values assigned to secret-looking names masked."""
    return _ASSIGNED.sub(lambda m: m.group(1) + MASK, mask_url_passwords(text))
