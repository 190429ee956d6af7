// A task's flow drawn as a graph (like Conductor's diagram): one box per step, coloured by its
// state, an arrow from every step it waits for (`After`), a for_each step's items counted and
// drawn as small squares, a sub-flow step linked to its child task. Layout: a step's column is
// the length of the longest path from a root to it, so every arrow points right.

import { el } from "./dom.js";
import { failedHere, shownState, stepState } from "./labels.js";
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
  // Every box is as tall as the tallest (a for_each step's item marks add rows): rows line up.
  const boxH = Math.max(...steps.map((step) => BOX_H + (step.Items ? marksHeight(step.Items) : step.ItemCounts ? MARK + 2 * MARK_GAP : 0)));
  const height = Math.max(...rows) * (boxH + GAP_Y) - GAP_Y + 2 * PAD;
  const width = (Math.max(...depth) + 1) * (BOX_W + GAP_X) - GAP_X + 2 * PAD;
  const at = ({ column, row }) => ({ x: PAD + column * (BOX_W + GAP_X), y: PAD + row * (boxH + GAP_Y) });
  const edges = [];
  steps.forEach((step, index) => {
    const after = step.After ?? (index ? [index - 1] : []);
    for (const before of after) {
      const from = at(place[before]), to = at(place[index]);
      const x1 = from.x + BOX_W, y1 = from.y + boxH / 2, x2 = to.x, y2 = to.y + boxH / 2;
      const mid = (x1 + x2) / 2;
      edges.push(svg("path", { class: "edge", d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 4},${y2}`,
        "marker-end": "url(#arrow)" }));
    }
  });
  const boxes = steps.map((step, index) => node(task, step, index, at(place[index]), boxH));
  const drawing = svg("svg", { class: "flow-graph", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "img", "aria-label": `flow of ${steps.length} steps` },
  svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 8 8", refX: 7, refY: 4, markerWidth: 7,
    markerHeight: 7, orient: "auto" }, svg("path", { d: "M0,0 L8,4 L0,8 z", class: "arrow" }))),
  edges, boxes);
  return el("div", { class: "flow-graph-wrap" }, drawing);
}

function node(task, step, index, { x, y }, boxH) {
  const state = shownState(step);
  const failed = failedHere(step);
  // Its runs in flight: the task's own, and those of its items kept in records (`ItemRuns`).
  const runs = [...(task.Runs ?? []), ...(task.ItemRuns ?? [])].filter((run) => run.Cursor === index).length;
  // Units whose command answered "not done yet" (check again later): their progress in the title.
  const waiting = (step.Items && step.Items.length ? step.Items : [step]).filter((u) => u.WaitingSince != null);
  // The step that failed says so first: "✖ failed → rolled back".
  // A state its kind names (a rejected approval) says it alone: "✖ rejected".
  const said = failed && step.State !== "failed" && !step.Shown?.State ? `✖ failed → ${state.label}` : `${failed ? "✖ " : ""}${state.label}`;
  const status = said +
    `${runs > 1 ? ` · ${runs} running` : ""}${waiting.length ? " · checking again" : ""}`;
  const about = detail(step);
  const childTask = step.Shown?.Child; // the child task it runs, as its kind says
  const child = childTask ? "child ↗" : null;
  const room = BOX_W - 2 * INSET;
  const group = svg("g", { class: `node ${state.css}${failed ? " failed-here" : ""}`, "data-step": index,
    "data-state": step.State, ...(failed ? { "data-failed": "true" } : {}), transform: `translate(${x},${y})` },
  svg("rect", { width: BOX_W, height: boxH, rx: 8, class: "box" }),
  // Labels are shortened to fit the box (an ellipsis); the whole of each is in the title.
  text(INSET, 19, fit(step.Name, room - (child ? measure(child, FONTS.child) + 8 : 0), FONTS.name), "name"),
  text(INSET, 36, fit(status, room, failed ? `600 ${FONTS.state}` : FONTS.state), "state"),
  text(INSET, 53, fit(about, room, FONTS.detail), "detail"));
  if (step.Items && step.Items.length) group.append(itemMarks(step.Items));
  else if (step.ItemCounts && step.ItemCount) group.append(countBar(step.ItemCounts, step.ItemCount));
  if (child) {
    const link = svg("a", { href: hashFor("task", childTask), class: "child-link" },
      text(BOX_W - INSET, 19, child, "child"));
    group.append(link);
  }
  const title = svg("title");
  title.textContent = `${index} ${step.Name}: ${status}\n${about}` +
    waiting.map((u) => (u.Progress ? `\n${u.Progress}` : "")).join("");
  group.append(title);
  return group;
}

// What the step does, as its kind describes it (the API's `Shown`): the same for every kind.
function detail(step) {
  return step.Shown?.Note ?? "";
}

// Item marks: one per item, in rows under the detail line; past MAX_MARK_ROWS rows of them, one
// bar whose segments are the items' states in item order (each segment's title counts them).
const MARK = 6, MARK_GAP = 2, INSET = 10, MAX_MARK_ROWS = 4;
const PER_ROW = Math.floor((BOX_W - 2 * INSET + MARK_GAP) / (MARK + MARK_GAP));

function marksHeight(items) {
  if (!items.length) return 0;
  const rows = items.length > PER_ROW * MAX_MARK_ROWS ? 1 : Math.ceil(items.length / PER_ROW);
  return rows * (MARK + MARK_GAP) + MARK_GAP;
}

function itemMarks(items) {
  const top = BOX_H - 4;
  if (items.length > PER_ROW * MAX_MARK_ROWS) return itemBar(items, top);
  return svg("g", { class: "items", transform: `translate(${INSET},${top})` },
    items.map((item, i) => {
      const mark = svg("rect", { x: (i % PER_ROW) * (MARK + MARK_GAP), y: Math.floor(i / PER_ROW) * (MARK + MARK_GAP),
        width: MARK, height: MARK, rx: 1, class: `item ${stepState(item.State).css}`, "data-item": i,
        "data-state": item.State });
      const title = svg("title");
      title.textContent = `item ${i}: ${stepState(item.State).label}`;
      mark.append(title);
      // An item of a for_each sub-flow step runs a child task of its own: its mark links to it.
      return item.ChildTaskId ? svg("a", { href: hashFor("task", item.ChildTaskId), class: "item-link" }, mark) : mark;
    }));
}

function itemBar(items, top) {
  const runs = [];
  items.forEach((item, i) => {
    const last = runs[runs.length - 1];
    if (last && last.state === item.State) last.count += 1;
    else runs.push({ state: item.State, first: i, count: 1 });
  });
  const scale = (BOX_W - 2 * INSET) / items.length;
  return svg("g", { class: "items item-bar", transform: `translate(${INSET},${top})` },
    runs.map((run) => {
      const segment = svg("rect", { x: run.first * scale, y: 0, width: Math.max(run.count * scale, 1), height: MARK,
        class: `item-segment ${stepState(run.state).css}`, "data-state": run.state, "data-count": run.count });
      const title = svg("title");
      title.textContent = `items ${run.first}-${run.first + run.count - 1}: ${stepState(run.state).label}`;
      segment.append(title);
      return segment;
    }));
}

// A step over records (its items are not in the task): one bar of its counts by state, each
// segment as long as its share of the items (its title counts them).
function countBar(counts, total) {
  const scale = (BOX_W - 2 * INSET) / total;
  let x = 0;
  return svg("g", { class: "items item-bar count-bar", transform: `translate(${INSET},${BOX_H - 4})` },
    Object.entries(counts).map(([state, count]) => {
      const segment = svg("rect", { x, y: 0, width: Math.max(count * scale, 1), height: MARK,
        class: `item-segment ${stepState(state).css}`, "data-state": state, "data-count": count });
      x += count * scale;
      const title = svg("title");
      title.textContent = `${count} of ${total} items: ${stepState(state).label}`;
      segment.append(title);
      return segment;
    }));
}

// Text widths, measured with the fonts console.css gives the graph's labels.
const FONTS = { name: "600 13px", state: "12px", detail: "11px", child: "12px" };
let canvas = null;

function measure(value, font) {
  canvas ??= document.createElement("canvas").getContext("2d");
  const family = getComputedStyle(document.body).fontFamily || "sans-serif";
  canvas.font = `${font} ${family}`;
  return canvas.measureText(value).width;
}

function fit(value, width, font) {
  if (measure(value, font) <= width) return value;
  let low = 0, high = value.length; // the longest prefix that fits with its ellipsis
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (measure(`${value.slice(0, mid)}…`, font) <= width) low = mid;
    else high = mid - 1;
  }
  return `${value.slice(0, low)}…`;
}
