"""What a label's key may be, for the API, the CLI and scoped tokens alike: a label is shown in
lists and the console, written in URLs (`?label=key=value`) and matched by a token's namespaces,
so its key is plain (a '.' would be a path to MongoDB)."""

import re

LABEL_KEY = r"[A-Za-z0-9_][A-Za-z0-9_/-]{0,62}"  # a pattern, for the API's schemas
_LABEL_KEY = re.compile(LABEL_KEY)


def is_label_key(key: str) -> bool:
    return _LABEL_KEY.fullmatch(key) is not None
