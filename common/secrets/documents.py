"""A document or a text as it may be shown: to an API client, on a terminal, in a log line, in
a webhook. Three layers, because a secret can hide in three ways:
1. parameters declared `secret: true` in flows.yaml (named in the task's SecretParameters);
2. keys that look secret wherever they are (common.secrets.names.SECRET_KEY), e.g. a command's
   output such as instance.password merged into Parameters;
3. the VALUE of either copied into free text (a step's error message quoting a connection
   string, say): every string is scrubbed of those values (common.secrets.values), in one pass
   over each string however many values there are (common.secrets.scrubber).
A URL's password is masked wherever it is quoted. The document keeps its shape: a masked value
becomes MASK, keys stay.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from common.secrets.names import KEY_VERDICTS, named_like_secret
from common.secrets.scrubber import MASK, Scrubber
from common.secrets.urls import mask_url_passwords
from common.secrets.values import HasParameters, parameter_secret_values, secret_values


def mask_secrets(value: Any) -> Any:
    """A copy of `value` with secret-looking keys and URL passwords masked, at any depth."""
    if isinstance(value, dict):
        # Every log line passes here (common.secrets.log_lines), a dozen keys each: a key's verdict
        # is looked up, and a number or a string without a URL kept as it is, without a call.
        verdicts, scalars = KEY_VERDICTS, _SCALARS
        return {
            k: MASK if (verdicts[k] if k in verdicts else named_like_secret(k))
            else v if type(v) in scalars or (type(v) is str and "://" not in v) else mask_secrets(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [v if _plain(v) else mask_secrets(v) for v in value]
    if isinstance(value, str):
        return mask_url_passwords(value)
    return value


_SCALARS = frozenset({int, float, bool, type(None)})


def mask_secrets_in_place(event: dict[str, Any]) -> dict[str, Any]:
    """`event` itself with what mask_secrets would mask masked: the same keys in the same order,
    a secret-looking key's value MASK, a value that may hold a secret (a URL, a dict, a list)
    replaced by its masked copy, never changed in place. For a dict that is the caller's own to
    change (a log line's event, one per line): mask_secrets would build a second one, key by key."""
    verdicts, scalars = KEY_VERDICTS, _SCALARS
    for key, value in event.items():  # values replaced, none added or removed: the loop may go on
        verdict = verdicts.get(key)
        if verdict or (verdict is None and named_like_secret(key)):
            event[key] = MASK
        elif type(value) is str:
            if "://" in value:
                event[key] = mask_url_passwords(value)
        elif type(value) not in scalars:
            event[key] = mask_secrets(value)
    return event


def _plain(value: Any) -> bool:
    """What mask_secrets would return unchanged without looking further: a number, a bool, None,
    or a string without "://" (no URL, so no URL password)."""
    kind = type(value)
    return kind in _SCALARS or (kind is str and "://" not in value)


def mask_parameters(parameters: dict[str, Any], secret_names: Collection[str]) -> dict[str, Any]:
    marked = {key: MASK if key in secret_names else value for key, value in parameters.items()}
    return mask_secrets(marked)  # type: ignore[no-any-return]


def masked_with_parameters(doc: dict[str, Any], secret_names: Collection[str]) -> dict[str, Any]:
    """A JSON-able document that holds `Parameters` but is not a task (a schedule), masked as a
    task's view is: declared secrets and secret-looking keys in Parameters, their values and URL
    passwords wherever they are quoted (an error message)."""
    values = parameter_secret_values(doc["Parameters"], secret_names)
    shown = {**doc, "Parameters": mask_parameters(doc["Parameters"], secret_names)}
    return scrub_strings(shown, Scrubber(values))  # type: ignore[no-any-return]


def scrubbed_text(text: str, task: HasParameters, values: list[str] | None = None) -> str:
    """Free text about a task (a failure message, an alarm) with its secret values masked
    (`values`: the task's secret_values, when the caller has them already)."""
    values = secret_values(task) if values is None else values
    # A task without secrets (most): the one empty scrubber, which holds no state to share.
    return scrub_strings(text, Scrubber(values) if values else _NO_SECRETS)  # type: ignore[no-any-return]


_NO_SECRETS = Scrubber(())


def scrub_values(value: Any, hidden: Iterable[str] | Scrubber) -> Any:
    """A copy of `value` with every occurrence of the `hidden` strings in its strings masked."""
    scrubber = hidden if isinstance(hidden, Scrubber) else Scrubber(hidden)
    return scrubber.value(value)


def scrub_strings(value: Any, secrets: Scrubber) -> Any:
    """`value` with the secret values and URL passwords masked in every string (keys stay: a
    view must keep the document's shape).

    One walk that touches only strings: a task document has a couple of hundred leaves, and two
    walks rebuilding all of it (scrub, then URLs) cost more than the rest of an API answer."""
    if isinstance(value, str):
        value = secrets.text(value)
        return mask_url_passwords(value) if "://" in value else value
    if isinstance(value, dict):
        return {key: scrub_strings(item, secrets) for key, item in value.items()}
    if isinstance(value, list | tuple):
        if not secrets:  # nothing to scrub: a plain string without a URL stays as it is
            return [item if type(item) is str and "://" not in item else scrub_strings(item, secrets) for item in value]
        return [scrub_strings(item, secrets) for item in value]
    return value
