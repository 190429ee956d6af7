"""Known secret values masked wherever they occur in text, in time linear in the text.

A task may hold thousands of secret values (a `secret: true` list), and every string of its
document is scrubbed of all of them each time the task is shown or logged: replacing them one
after the other costs strings x secrets. A Scrubber is built once for a set of values and then
costs, per string:
- a set lookup when the whole string is a secret (a secret list's items are);
- a cheap check that a secret may occur in it: each of a few secrets searched for directly, or
  the string's leading fragments of the secrets' length looked up in a set;
- only then one pass of an Aho-Corasick automaton, which finds every occurrence of every
  secret in one walk over the string, whatever their number.

Every character covered by an occurrence of any secret is masked: occurrences that overlap
(one secret inside another, or one's end another's start) become one MASK, so no part of a
secret survives whatever the order of the values. Occurrences that only touch stay two masks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

MASK = "***"
_GRAM = 4  # the leading characters of each secret that the prefilter looks for
_FEW = 8  # up to this many values, searching for each directly is cheaper than the prefilter

# Aho-Corasick: per node, its transitions; the longest secret ending there (0: none); its failure link.
_Automaton = tuple[list[dict[str, int]], list[int], list[int]]


class Scrubber:
    def __init__(self, values: Iterable[str]):
        secrets = {v for v in values if v}
        self._whole = frozenset(secrets)
        self._few = sorted(secrets, key=len, reverse=True) if len(secrets) <= _FEW else None
        self._gram = min((len(s) for s in secrets), default=_GRAM)
        self._gram = min(self._gram, _GRAM)
        self._grams = frozenset(s[: self._gram] for s in secrets)
        # The automaton, built when a string first holds a secret that is not the whole of it:
        # most views never need it (secret list items are whole strings). A log line's scrubber
        # is shared by every thread of a step's context (the command's, the store thread's): the
        # automaton is built apart and set in one assignment, so another thread sees none (and
        # builds its own) or a finished one, never one without its failure links yet.
        self._automaton: _Automaton | None = None

    def __bool__(self) -> bool:
        return bool(self._whole)

    @property
    def values(self) -> frozenset[str]:
        return self._whole

    def text(self, text: str) -> str:
        if not self._whole:
            return text
        if text in self._whole:
            return MASK
        if not self._may_hold(text):
            return text
        return self._masked(text)

    def value(self, value: Any) -> Any:
        """A copy of `value` with its strings scrubbed at any depth (keys stay: a view keeps
        the document's shape)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def _may_hold(self, text: str) -> bool:
        if self._few is not None:
            return any(secret in text for secret in self._few)
        size = self._gram
        return not self._grams.isdisjoint(text[i : i + size] for i in range(len(text) - size + 1))

    def _masked(self, text: str) -> str:
        automaton = self._automaton
        if automaton is None:
            automaton = self._automaton = self._build()
        goto, longest, fail = automaton
        spans: list[list[int]] = []  # [start, end) of the masks, in order, never overlapping
        node = 0
        for end, char in enumerate(text, start=1):
            while True:
                step = goto[node].get(char)
                if step is not None:
                    node = step
                    break
                if node == 0:
                    break
                node = fail[node]
            if longest[node]:
                start = end - longest[node]
                while spans and start < spans[-1][1]:  # overlaps a mask before: one mask for both
                    start = min(start, spans.pop()[0])
                spans.append([start, end])
        parts, done = [], 0
        for start, end in spans:
            parts += [text[done:start], MASK]
            done = end
        parts.append(text[done:])
        return "".join(parts)

    def _build(self) -> _Automaton:
        automaton: _Automaton = ([{}], [0], [0])
        for secret in self._whole:
            self._add(automaton, secret)
        self._link(automaton)
        return automaton

    @staticmethod
    def _add(automaton: _Automaton, secret: str) -> None:
        goto, longest, fail = automaton
        node = 0
        for char in secret:
            step = goto[node].get(char)
            if step is None:
                step = len(goto)
                goto[node][char] = step
                goto.append({})
                longest.append(0)
                fail.append(0)
            node = step
        longest[node] = len(secret)

    @staticmethod
    def _link(automaton: _Automaton) -> None:
        """Failure links, breadth first: the longest proper suffix of a node's text that is a
        prefix of some secret; a node with no secret of its own ends the longest its link ends."""
        goto, longest, fail = automaton
        queue = deque(goto[0].values())
        while queue:
            node = queue.popleft()
            for char, child in goto[node].items():
                link = fail[node]
                while link and char not in goto[link]:
                    link = fail[link]
                target = goto[link].get(char, 0)
                fail[child] = target if target != child else 0
                if not longest[child]:
                    longest[child] = longest[fail[child]]
                queue.append(child)
