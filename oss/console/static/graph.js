// A task's flow drawn as a graph (like Conductor's diagram): one box per step, coloured by its
// state, an arrow from every step it waits for (`After`), a for_each step's items counted and
// drawn as small squares, a sub-flow step linked to its child task. Layout: a step's column is
// the length of the longest path from a root to it, so every arrow points right.

import { el } from "./dom.js";
import { stepState } from "./labels.js";
import { hashFor } from "./route.js";

const SVG = "http://www.w3.org/2000/svg";
const BOX_W = 170, BOX_H = 62, GAP_X = 60, GAP_Y = 22, PAD = 10;

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

function text(x, y, value, cls) {
  const node = svg("text", { x, y, class: cls });
  node.textContent = value; // a text node: step names are configuration, never markup
  return node;
}

export function columns(steps) {
  const depth = [];
  steps.forEach((step, index) => {
    const after = step.After ?? (index ? [index - 1] : []);
    depth[index] = after.length ? Math.max(...after.map((b) => depth[b] ?? 0)) + 1 : 0;
  });
  return depth;
}

export function flowGraph(task) {
  const steps = task.Steps;
  const depth = columns(steps);
  const rows = [];
  const place = steps.map((_, index) => {
    const column = depth[index];
    rows[column] = (rows[column] ?? 0) + 1;
    return { column, row: rows[column] - 1 };
  });
  const height = Math.max(...rows) * (BOX_H + GAP_Y) - GAP_Y + 2 * PAD;
  const width = (Math.max(...depth) + 1) * (BOX_W + GAP_X) - GAP_X + 2 * PAD;
  const at = ({ column, row }) => ({ x: PAD + column * (BOX_W + GAP_X), y: PAD + row * (BOX_H + GAP_Y) });
  const edges = [];
  steps.forEach((step, index) => {
    const after = step.After ?? (index ? [index - 1] : []);
    for (const before of after) {
      const from = at(place[before]), to = at(place[index]);
      const x1 = from.x + BOX_W, y1 = from.y + BOX_H / 2, x2 = to.x, y2 = to.y + BOX_H / 2;
      const mid = (x1 + x2) / 2;
      edges.push(svg("path", { class: "edge", d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 4},${y2}`,
        "marker-end": "url(#arrow)" }));
    }
  });
  const boxes = steps.map((step, index) => node(task, step, index, at(place[index])));
  const drawing = svg("svg", { class: "flow-graph", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "img", "aria-label": `flow of ${steps.length} steps` },
  svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7,
    markerHeight: 7, orient: "auto" }, svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrow" }))),
  edges, boxes);
  return el("div", { class: "flow-graph-wrap" }, drawing);
}

function node(task, step, index, { x, y }) {
  const state = stepState(step.State);
  const runs = (task.Runs ?? []).filter((run) => run.Cursor === index).length;
  // Units whose command answered "not done yet" (check again later): their progress in the title.
  const waiting = (step.Items && step.Items.length ? step.Items : [step]).filter((u) => u.WaitingSince != null);
  const group = svg("g", { class: `node ${state.css}`, "data-step": index, "data-state": step.State,
    transform: `translate(${x},${y})` },
  svg("rect", { width: BOX_W, height: BOX_H, rx: 8, class: "box" }),
  text(10, 19, step.Name, "name"),
  text(10, 36, `${state.label}${runs > 1 ? ` · ${runs} running` : ""}${waiting.length ? " · checking again" : ""}`,
    "state"),
  detail(step));
  if (step.Items && step.Items.length) group.append(itemMarks(step.Items));
  if (step.ChildTaskId) {
    const link = svg("a", { href: hashFor("task", step.ChildTaskId), class: "child-link" },
      text(BOX_W - 10, 19, "child ↗", "child"));
    group.append(link);
  }
  const title = svg("title");
  title.textContent = `${index} ${step.Name}: ${state.label}` +
    waiting.map((u) => (u.Progress ? `\n${u.Progress}` : "")).join("");
  group.append(title);
  return group;
}

function detail(step) {
  if (step.Flow) return text(10, 53, `sub-flow ${step.Flow}`, "detail");
  if (step.ForEach) {
    const items = step.Items ?? [];
    const done = items.filter((item) => item.State === "succeeded").length;
    return text(10, 53, step.Items ? `for_each ${step.ForEach}: ${done}/${items.length}` : `for_each ${step.ForEach}`,
      "detail");
  }
  return text(10, 53, `${step.NormalModule} · ${step.NormalCommand}`, "detail");
}

function itemMarks(items) {
  const size = 6, shown = items.slice(0, 14);
  return svg("g", { class: "items", transform: `translate(${BOX_W - 8 - shown.length * (size + 2)},${BOX_H - 14})` },
    shown.map((item, i) => {
      const mark = svg("rect", { x: i * (size + 2), y: 0, width: size, height: size, rx: 1,
        class: `item ${stepState(item.State).css}`, "data-item": i, "data-state": item.State });
      // An item of a for_each sub-flow step runs a child task of its own: its mark links to it.
      return item.ChildTaskId ? svg("a", { href: hashFor("task", item.ChildTaskId), class: "item-link" }, mark) : mark;
    }));
}
