"""What a label's key may be, for the API, the CLI and scoped tokens alike: a label is shown in
lists and the console, written in URLs (`?label=key=value`) and matched by a token's namespaces,
so its key is plain."""

LABEL_KEY = r"[A-Za-z0-9_][A-Za-z0-9_/-]{0,62}"
