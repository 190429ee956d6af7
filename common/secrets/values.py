"""Which values are secret: those of the parameters a task type declares secret, and of any key
named like a secret (common.secrets.names), at any depth, as text. They are what a view, a log
line or a webhook scrubs from every string it shows (common.secrets.documents, log_lines).

Values shorter than MIN_SCRUBBED characters are not scrubbed from text: they would mangle
ordinary words, and flows.yaml can demand a longer secret with min_length.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from common.secrets.names import KEY_VERDICTS, named_like_secret

MIN_SCRUBBED = 4


class HasParameters(Protocol):
    """A task, as far as its secrets go."""

    Parameters: dict[str, Any]
    SubmittedParameters: dict[str, Any]
    SecretParameters: list[str]


def secret_values(task: HasParameters) -> list[str]:
    """The task's secret values as text, for common.secrets.log_lines.hidden_values. Worked out
    twice at every step (at the claim, and from what the commit wrote): one walk that gathers
    them into a set, without a generator per dict."""
    names = set(task.SecretParameters) if task.SecretParameters else ()
    found: set[str] = set()
    _gather(task.Parameters, names, found)
    _gather(task.SubmittedParameters, names, found)
    return sorted(found, key=len, reverse=True)


def parameter_secret_values(parameters: dict[str, Any], secret_names: Collection[str]) -> list[str]:
    """The secret values of parameters that are not (yet) a task's: a schedule's, say."""
    return sorted(secret_leaves(parameters, set(secret_names)), key=len, reverse=True)


def secret_leaves(parameters: dict[str, Any], names: Collection[str]) -> set[str]:
    """The values under a key in `names` or named like a secret, at any depth (a command's
    output may name `password` anywhere), each leaf as text, once."""
    found: set[str] = set()
    _gather(parameters, names, found)
    return found


def _gather(parameters: dict[str, Any], names: Collection[str], found: set[str]) -> None:
    verdicts = KEY_VERDICTS  # named_like_secret's, read here first: a call per key is most of the walk
    for key, value in parameters.items():
        secret = verdicts.get(key)
        if secret or (secret is None and named_like_secret(key)) or key in names:
            _leaves(value, found)
        elif type(value) in _PLAIN:
            continue
        elif isinstance(value, dict):
            _gather(value, (), found)
        elif isinstance(value, list):
            _gather_in_list(value, found)


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _gather_in_list(values: list[Any], found: set[str]) -> None:
    """A list's keys are its indices, never secret-looking: only the dicts in it may name a
    secret. Its plain values are passed over without a look (a for_each list of 10,000 hosts)."""
    for value in values:
        if isinstance(value, dict | list):  # one look per plain value
            if isinstance(value, dict):
                _gather(value, (), found)
            else:
                _gather_in_list(value, found)


def _leaves(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _leaves(item, found)
    elif isinstance(value, list):
        for item in value:
            _leaves(item, found)
    elif value is not None and not isinstance(value, bool):
        text = str(value)
        if len(text) >= MIN_SCRUBBED:
            found.add(text)
