"""Every relative link of README.md and docs/ leads somewhere: the file exists, and an anchor
(`page.md#a-heading`) names a heading of that page, as GitHub makes anchors from headings."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.doc_examples import REPO, pages

_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCED = re.compile(r"^```.*?^```", re.M | re.S)


def anchors(page: Path) -> set[str]:
    text = _FENCED.sub("", page.read_text())
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def links(page: Path) -> list[str]:
    return [target for target in _LINK.findall(_FENCED.sub("", page.read_text()))
            if not re.match(r"[a-z]+:", target)]  # http:, https:, mailto: are not checked here


def test_every_relative_link_leads_to_a_page_and_heading() -> None:
    broken = []
    for page in pages():
        for target in links(page):
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            if not where.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and where.suffix == ".md" and anchor not in anchors(where):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_checker_sees_a_broken_link(tmp_path) -> None:
    page = tmp_path / "a.md"
    page.write_text("# Title here\n\n[ok](#title-here) [bad](#nothing) [gone](b.md)\n")
    assert links(page) == ["#title-here", "#nothing", "b.md"]
    assert anchors(page) == {"title-here"}
