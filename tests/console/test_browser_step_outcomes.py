"""What the console shows of a for_each step and of a sub-flow step (docs/design/task-document.md,
"Units"): a step that ran 20 items and rolled back reads as ended, with its rollback, marked as the
step that failed; in the graph every item has its mark, no mark covers the item count, and no label
(a long sub-flow name, a step name beside its child link) runs out of its box. Screenshots of both
graphs go to tests/artifacts/."""

from __future__ import annotations

import pytest

from tests.console.browser import ARTIFACTS, assert_clean, sign_in
from tests.console.live import LiveConsole

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the package is in requirements.lock
    pass

pytestmark = pytest.mark.slow
NODES = [f"n{i}" for i in range(20)]

# Per node of the graph: the texts not inside its box, and the pairs of its texts, item marks and
# the item count that overlap (a mark over the count, a step name under its child link).
GEOMETRY = """nodes => nodes.map(node => {
  const box = node.querySelector("rect.box").getBoundingClientRect();
  const inside = (r) => r.left >= box.left - 0.5 && r.right <= box.right + 0.5
    && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5;
  const texts = [...node.querySelectorAll("text")].filter((t) => t.textContent);
  const marks = [...node.querySelectorAll("rect.item, rect.item-segment")];
  const shapes = [...texts.map((t) => [t.textContent, t.getBoundingClientRect()]),
                  ...marks.map((m) => [`item ${m.dataset.item ?? "bar"}`, m.getBoundingClientRect()])];
  const overlaps = [];
  shapes.forEach(([a, ra], i) => shapes.slice(i + 1).forEach(([b, rb]) => {
    if (ra.left < rb.right && rb.left < ra.right && ra.top < rb.bottom && rb.top < ra.bottom) overlaps.push(`${a} / ${b}`);
  }));
  return { step: node.dataset.step, outside: shapes.filter(([, r]) => !inside(r)).map(([t]) => t), overlaps };
})"""


@pytest.fixture(scope="module")
def tasks(live: LiveConsole) -> dict[str, str]:
    made = {
        # Item 5 fails: the items that ran are rolled back, the rest are cancelled or never start.
        "wide": live.submit("fan_out", nodes=NODES, _baton_faults=[{"command": "step_item", "action": "fail", "item": 5}]),
        "rollout": live.submit("replica_rollout", nodes=NODES),
        "many": live.submit("fan_out", nodes=[f"n{i}" for i in range(100)]),
    }
    for task_id in made.values():
        live.wait_final(task_id, timeout=120)
    return made


def graph_shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("svg.flow-graph").screenshot(path=str(ARTIFACTS / f"console-{name}.png"))


def assert_fits(graph) -> None:
    problems = [g for g in graph.locator("g.node").evaluate_all(GEOMETRY) if g["outside"] or g["overlaps"]]
    assert problems == []


def test_a_rolled_back_for_each_step_reads_as_ended_rolled_back_and_failed_here(page, live, tasks):
    task = live.api.get(f"/api/v1/tasks/{tasks['wide']}").json()
    step = task["Steps"][1]
    sign_in(page, at=f"/console/#/task/{tasks['wide']}")
    expect(page.locator(".task-head .badge")).to_have_text("Failed · rolled back")
    item = page.locator('.timeline li.step[data-step="1"]')
    # The step that failed is marked, in the list and in the graph.
    expect(item).to_have_attribute("data-failed", "true")
    expect(item.locator(".failed-flag")).to_be_visible()
    expect(page.locator('svg.flow-graph g.node[data-step="1"]')).to_have_attribute("data-failed", "true")
    # Both phases ran and ended: times, a duration that is not "so far", every attempt counted.
    normal, rollback = item.locator(".phase-normal"), item.locator(".phase-rollback")
    expect(rollback).not_to_have_class("phase phase-rollback not-run")
    expect(rollback.locator(":scope > .phase-times time")).to_have_count(2)
    expect(normal.locator(":scope > .phase-times time")).to_have_count(2)
    expect(normal.locator(".attempts")).to_have_text(f"attempts {step['Attempts']} over 20 items")
    expect(rollback.locator(".attempts")).to_have_text(f"attempts {step['RollbackAttempts']} over 20 items")
    expect(rollback.locator(".code")).to_have_text("rolled back")
    tooks = page.locator(".took").all_inner_texts()
    assert tooks and not [t for t in tooks if "so far" in t]
    graph = page.locator("svg.flow-graph")
    expect(graph.locator('g.node[data-step="1"] rect.item')).to_have_count(20)  # every item has its mark
    marks = graph.locator('g.node[data-step="1"] rect.item').evaluate_all("r => r.map(i => i.dataset.state)")
    assert marks == [i["State"] for i in step["Items"]]
    expect(graph.locator('g.node[data-step="1"] text.detail')).to_have_text("for_each nodes: 0/20")
    assert_fits(graph)
    graph_shot(page, "graph-for-each-20-rolled-back")
    item.screenshot(path=str(ARTIFACTS / "console-timeline-for-each-20-rolled-back.png"))
    assert_clean(page)


def test_sub_flow_steps_show_their_start_and_fit_their_labels(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['rollout']}")
    expect(page.locator(".task-head .badge")).to_have_text("Succeeded")
    item = page.locator('.timeline li.step[data-step="0"]')
    normal = item.locator(".phase-normal")
    expect(normal).not_to_have_class("phase phase-normal not-run")
    expect(normal.locator(":scope > .phase-times time")).to_have_count(2)
    expect(normal.locator(".attempts")).to_have_text("attempts 1/1")
    graph = page.locator("svg.flow-graph")
    expect(graph.locator('g.node[data-step="1"] a.item-link rect.item')).to_have_count(20)
    expect(graph.locator('g.node[data-step="0"] a.child-link')).to_be_visible()
    expect(graph.locator('g.node[data-step="1"] text.detail')).to_contain_text("for_each nodes: 20/20 · ")
    # A label too long for the box is shortened; the whole of it is in the node's title.
    title = graph.locator('g.node[data-step="0"] > title').text_content()
    assert "provision_every_replica_member" in title and "sub-flow replica_member_provisioning" in title
    assert_fits(graph)
    graph_shot(page, "graph-sub-flow")
    assert_clean(page)


def test_a_step_with_more_items_than_marks_fit_draws_them_all_as_one_bar(page, live, tasks):
    sign_in(page, at=f"/console/#/task/{tasks['many']}")
    expect(page.locator(".task-head .badge")).to_have_text("Succeeded")
    graph = page.locator("svg.flow-graph")
    bar = graph.locator('g.node[data-step="1"] g.item-bar rect.item-segment')
    expect(bar).to_have_count(1)
    assert bar.evaluate_all("r => r.map(s => [s.dataset.state, Number(s.dataset.count)])") == [["succeeded", 100]]
    expect(graph.locator('g.node[data-step="1"] text.detail')).to_have_text("for_each nodes: 100/100")
    assert_fits(graph)
    graph_shot(page, "graph-for-each-100")
    assert_clean(page)
