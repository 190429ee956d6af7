"""URLs with their credentials hidden: a password in "scheme://user:password@host" text, and a
URL as an error message may quote it (user, password and query masked)."""

from __future__ import annotations

import re

from common.secrets.scrubber import MASK

# Masking runs on untrusted text (parameters, error messages) in every log line: it must be linear
# in its input. A regex for "scheme://user:password@" restarts at every letter of a long run and
# rescans it (quadratic); mask_url_passwords finds each "://" once and scans every character a
# bounded number of times. These patterns are single character classes: no nesting, no backtracking.
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_USER_END = re.compile(r"[:/@\s]")
_PASSWORD_END = re.compile(r"[@\s]")


def mask_url_passwords(text: str) -> str:
    """Every "scheme://user:password@" in `text` with the password replaced by MASK.

    Same result as re.sub(r"([a-z][a-z0-9+.-]*://[^:/@\\s]+:)[^@\\s]+@", r"\\1***@", text, flags=re.I)
    (the tests check it), in linear time: each "://" is found once by str.find; the backward look
    for the scheme stops at the previous match or "://"; the user scan stops at the next ":" or
    "/", so those scans never overlap; and the password's end ("@" or whitespace) is searched once
    and reused for every candidate before it.
    """
    if "://" not in text:
        return text
    parts: list[str] = []
    done = 0  # text[:done] is decided (copied to parts)
    stop = -1  # index of the first "@" or whitespace at or after `after_colon`, cached; len: none
    i = text.find("://")
    while i != -1:
        if _has_scheme(text, done, i):
            user_start = i + 3
            user_end = _search(_USER_END, text, user_start)
            if user_end > user_start and user_end < len(text) and text[user_end] == ":":
                after_colon = user_end + 1
                if stop < after_colon:
                    stop = _search(_PASSWORD_END, text, after_colon)
                if stop > after_colon and stop < len(text) and text[stop] == "@":
                    parts += [text[done:after_colon], MASK, "@"]
                    done = stop + 1
                    i = text.find("://", done)
                    continue
        i = text.find("://", i + 1)
    parts.append(text[done:])
    return "".join(parts)


def redacted_url(url: str) -> str:
    """A URL as an error message may quote it: what stands between its scheme and its last "@"
    (user and password) and what follows a "?" or "#" after that (a token in the query) shown
    as MASK. A refused URL is no better formed than any other, so this parses nothing: a
    password holding "?", "/" or "@" is masked whole all the same."""
    text = url
    at = text.rfind("@")
    if at != -1:
        scheme = text.find("://")
        start = scheme + 3 if 0 <= scheme < at else (text.find(":") + 1 if 0 <= text.find(":") < at else 0)
        text = text[:start] + MASK + text[at:]
    rest = text.rfind("@") + 1
    cut = min((i for i in (text.find("?", rest), text.find("#", rest)) if i != -1), default=-1)
    return text if cut == -1 else text[: cut + 1] + MASK


def _has_scheme(text: str, start: int, i: int) -> bool:
    """Is text[start:i] ending in a URL scheme: scheme characters back to a letter?"""
    j = i - 1
    while j >= start and text[j] in _SCHEME_CHARS:
        if text[j].isalpha():
            return True
        j -= 1
    return False


def _search(pattern: re.Pattern[str], text: str, pos: int) -> int:
    found = pattern.search(text, pos)
    return found.start() if found else len(text)
