"""docs/guide/locks-and-waits.md "A deadline": its flows.yaml example loads, with its deadline
(its `baton` commands are checked with every other one the docs show: test_doc_examples.py)."""

from __future__ import annotations

from common.flows.loader import parse_flows
from tests.support.doc_examples import blocks


def test_the_flows_example_loads_with_its_deadline() -> None:
    (yaml_block,) = blocks("docs/guide/locks-and-waits.md", "A deadline", "yaml")
    catalog = parse_flows(yaml_block, "docs/guide/locks-and-waits.md", None)
    assert catalog.get("nightly_resize").deadline == 1800

