"""The fenced code blocks of README.md and docs/, found the one way every example test reads
them (the convention is written down in docs/README.md, "Examples in these pages are run").

A block is "```LANG [flows|step] [test=PATH]" ... "```". A line `<!-- not run: why -->` just
before the fence marks a block deliberately not run; the example test skips it with that reason.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"

_FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(.*?)\s*-->\s*$")
_HEADING = re.compile(r"^(#{1,6}) (.+)$", re.M)


@dataclass(frozen=True)
class Block:
    path: Path  # the page
    line: int  # the fence's line, 1-based
    lang: str  # sh, python, yaml, json, text
    tags: tuple[str, ...]  # the words after the language: `flows`, `step`
    test: str | None  # test=PATH: the test that runs it
    code: str
    heading: str  # the nearest heading above it
    not_run: str | None = field(default=None)  # why it is deliberately not run

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def pages() -> list[Path]:
    """README.md, then every page under docs/ (the design's pages under docs/design/ too)."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def page_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    headings = [(m.start(), m.group(2).strip()) for m in _HEADING.finditer(text)]
    found = []
    for m in _FENCE.finditer(text):
        # Headings inside a code block (`# a comment` in sh) are not headings: keep the last one
        # that starts before this block and outside any earlier block.
        heading = next((h for start, h in reversed(headings) if start < m.start()
                        and not _inside_block(text, start)), "")
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        not_run = _NOT_RUN.search(before)
        words = m.group(2).split()
        test = next((w.split("=", 1)[1] for w in words if w.startswith("test=")), None)
        tags = tuple(w for w in words if not w.startswith("test="))
        found.append(Block(path, text.count("\n", 0, m.start()) + 1, m.group(1), tags, test, m.group(3),
                           heading, not_run.group(1) if not_run else None))
    return found


def _inside_block(text: str, position: int) -> bool:
    return text.count("\n```", 0, position) % 2 == 1


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in page_blocks(page)]


def blocks(path: Path | str, heading: str, lang: str) -> list[str]:
    """The code of the `lang` blocks under `heading` (the nearest heading above each block) in a
    page, in order. `path` is relative to the repository or absolute."""
    page = path if isinstance(path, Path) else REPO / path
    return [b.code for b in page_blocks(page) if b.heading == heading and b.lang == lang]


def section(path: Path | str, heading: str) -> str:
    """The text of a section: from its heading to the next heading of the same or a higher level."""
    page = path if isinstance(path, Path) else REPO / path
    text = page.read_text()
    m = re.search(rf"^(#+) {re.escape(heading)}\n", text, re.M)
    assert m, f"{page.name} has no heading {heading!r}"
    level = len(m.group(1))
    end = re.compile(rf"^#{{1,{level}}} ", re.M)
    rest = text[m.end():]
    stop = next((n.start() for n in end.finditer(rest) if not _inside_block(rest, n.start())), len(rest))
    return text[m.start():m.end() + stop]


def shell_lines(code: str) -> list[tuple[list[str], bool]]:
    """A `sh` block's lines as words, continuations joined, comments dropped; each with whether
    it runs in the background (a trailing `&`, dropped from the words)."""
    found, pending = [], ""
    for line in code.replace("\\\n", " ").splitlines():
        pending += line + "\n"
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quoted argument (a JSON body) goes on over the next line
            continue
        pending = ""
        if words:
            background = words[-1] == "&"
            found.append(([w for w in words if w != "&"], background))
    return found


def substituted(words: list[str]) -> tuple[str, list[str]] | None:
    """A `NAME=$(command args)` line (a variable set to what a command prints): NAME and the
    command's words; None for any other line."""
    m = re.fullmatch(r"(\w+)=\$\((.+)", words[0])
    if not m or not words[-1].endswith(")"):
        return None
    inner = [m.group(2), *words[1:]]
    inner[-1] = inner[-1].removesuffix(")")
    return m.group(1), inner


def curl_request(words: list[str]) -> tuple[str, str, dict[str, str], str]:
    """A `curl -X METHOD URL -H 'K: V' -d BODY` line's method, URL, headers and body."""
    headers = dict(w.split(": ", 1) for i, w in enumerate(words) if i and words[i - 1] == "-H")
    url = next(w for w in words if w.startswith("http"))
    return words[words.index("-X") + 1], url, headers, words[words.index("-d") + 1]
