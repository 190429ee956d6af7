// One task: what it is and where it stands, the operator actions that fit, its step timeline,
// its parameters (as the API's masked view has them: secrets are "***" before they arrive)
// and its history. Follows the task's changes over Server-Sent Events (stream.js) while it has
// not ended: one read to draw it, then the server pushes every change; no polling.

import { call } from "./api.js";
import { el, replace, when, duration, asText } from "./dom.js";
import { FINAL, taskStatus } from "./labels.js";
import { followTask } from "./stream.js";
import { hashFor } from "./route.js";
import { badge, labels, errorBanner } from "./widgets.js";
import { actionBar, actionEndpoint, actionLabel, stepActionBar } from "./actions.js";
import { timeline } from "./timeline.js";
import { history } from "./history.js";
import { flowGraph } from "./graph.js";
import { itemTables } from "./items.js";

const MASK = "***";

function sameCounts(a, b) {
  const sorted = (counts) => JSON.stringify(Object.entries(counts ?? {}).sort());
  return sorted(a) === sorted(b);
}

export function showTask(root, taskId) {
  const header = el("section", { class: "card task-head" });
  const outcome = el("div", { class: "outcome", "aria-live": "polite" });
  const actions = el("section", { class: "card" });
  const flow = el("section", { class: "card flow" });
  const steps = el("section", { class: "card" });
  const params = el("section", { class: "card" });
  const items = el("section", { class: "card items-card" });
  const events = el("section", { class: "card" });
  const itemViews = new Map(); // each fan-out step's filter and page, kept across redraws
  replace(root,
    el("a", { class: "back", href: hashFor("tasks"), text: "← All tasks" }),
    header, outcome, actions, flow,
    el("div", { class: "columns" }, steps, params),
    items, events);
  let version = null;
  let shown = null; // the task as drawn: a progress event updates its steps' counts
  let itemsDue = null;
  const drawItems = (task) => {
    const tables = itemTables(task, itemViews);
    items.hidden = tables === null;
    replace(items, el("h2", { text: "Items" }), tables);
  };
  // Items of a step over records change without a new task version: their counts come as
  // `progress` events, drawn at most once a second (each draw reads the page shown again).
  // The stream's first count of a step repeats what the task view showed: redrawn, the table
  // would be replaced under the operator (a half-typed item index lost) for nothing.
  const progress = (event) => {
    const step = shown?.Steps[event.Step];
    if (!step || sameCounts(step.ItemCounts, event.ItemCounts)) return;
    step.ItemCounts = event.ItemCounts;
    itemsDue ??= setTimeout(() => { itemsDue = null; drawItems(shown); }, 1000);
  };

  const draw = (task) => {
    if (task.Version === version) return;
    version = task.Version;
    shown = task;
    replace(header, ...summary(task));
    replace(actions, el("h2", { text: "Operator actions" }), stepActionBar(task, performStep), actionBar(task, perform));
    replace(flow, el("h2", { text: "Flow" }), flowGraph(task),
      task.Parent ? el("p", { class: "muted" }, "A sub-flow of task ",
        el("a", { href: hashFor("task", task.Parent.TaskId), text: task.Parent.TaskId }),
        ` (its step ${task.Parent.Cursor}).`) : null);
    replace(steps, el("h2", { text: "Steps" }), timeline(task));
    replace(params, el("h2", { text: "Parameters" }), parameters(task));
    drawItems(task);
    replace(events, el("h2", { text: `History (${task.History.length} events)` }), history(task));
  };
  let stream = null;
  let left = false;
  const follow = () => {
    if (stream !== null || left) return;
    // Ends by itself once the task is final; a 401 or 404 is shown by one plain read.
    stream = followTask(taskId, draw, () => { stream = null; refresh(); }, progress);
  };
  const refresh = async () => {
    try {
      const task = await call("GET", `/tasks/${encodeURIComponent(taskId)}`);
      draw(task);
      // A final task's stream ends at once; a retry brings it back (perform follows it again).
      if (!FINAL.has(task.TaskStatus) || (task.Runs ?? []).length > 0) follow();
    } catch (error) {
      replace(header, errorBanner(error));
    }
  };

  // A step's action (approve, reject): the one route every kind's actions share.
  const performStep = (step, action, reason) => perform(action, reason, {},
    `/tasks/${encodeURIComponent(taskId)}/steps/${encodeURIComponent(step)}/actions/${encodeURIComponent(action)}`);

  async function perform(action, reason, extra = {}, path = null) {
    replace(outcome, el("div", { class: "banner info", text: `${actionLabel(action)}: sending…` }));
    try {
      const task = await call("POST", path ?? `/tasks/${encodeURIComponent(taskId)}/${actionEndpoint(action)}`, { reason, ...extra });
      const status = taskStatus(task);
      replace(outcome, el("div", { class: "banner ok", role: "status",
        text: `${actionLabel(action)} done: the task is now ${status.label} (${status.name}).` }));
      draw(task);
    } catch (error) {
      replace(outcome, el("div", { class: "banner error", role: "alert",
        text: `${actionLabel(action)} refused: ${error.describe ? error.describe() : error}` }));
    }
    stream?.stop(); // whatever happened, show the task as it is now and follow it
    stream = null;
    refresh();
  }

  refresh();
  return { stop() { left = true; stream?.stop(); } };
}

function summary(task) {
  const status = taskStatus(task);
  const fact = (name, ...value) => el("div", {}, el("dt", { text: name }), el("dd", {}, ...value));
  const cancel = task.CancelRequested;
  return [
    el("div", { class: "title-row" },
      el("h1", { text: task.TaskType }), badge(status),
      el("code", { class: "id", text: task.TaskId })),
    task.TaskMessage ? el("p", { class: `task-message ${status.css}`, text: task.TaskMessage }) : null,
    el("dl", { class: "facts" },
      fact("Owner", task.UserId ?? "—"),
      fact("Priority", String(task.Priority)),
      fact("Labels", labels(task.Labels)),
      task.ScheduledFor ? fact("Scheduled", "starts at ", when(task.ScheduledFor)) : [],
      // What it waits for, in its gate's words as the API serves them (a freeze window, a drained
      // module, its lock, another task, ...): a new gate needs no code here.
      task.WaitShown ? waitShown(task.WaitShown) : [],
      task.Lock ? fact("Lock", `${task.Lock.Key} (${lockMode(task.Lock, "", ", ")}limit ${task.Lock.Limit}): ${task.Lock.State}` +
        (task.Lock.State === "kept" ? ", held until an operator ends the task" : "")) : [],
      // Its task type's rate (docs/guide/rate-limits.md): the slot it took is its start.
      task.Rate && task.Rate.State === "taken" ? fact("Rate", `${task.Rate.Key}${rateText(task.Rate)}: slot taken at `,
        when(task.Rate.Since)) : [],
      fact("Created", when(task.TimeCreate)),
      fact("Started", when(task.TimeStart)),
      fact("Ended", when(task.TimeEnd)),
      fact("Took", duration(task.TimeStart, task.TimeEnd, FINAL.has(task.TaskStatus)) || "—"),
      // A task no step of which ever ran (delayed, held, cancelled before its start) reached none.
      fact("Step", task.TimeStart ? `${task.TaskCursor + 1} of ${task.Steps.length} reached`
        : `none of ${task.Steps.length} started${FINAL.has(task.TaskStatus) ? "" : " yet"}`),
      // A retry runs the flow again as a new generation; the history keeps every run's events.
      task.Generation ? fact("Run", `${task.Generation + 1} (retried ${task.Generation}×)`) : [],
      task.IdempotencyKey ? fact("Idempotency key", task.IdempotencyKey) : [],
      // The revision of its task type it runs (`baton flows diff` tells revisions apart).
      task.FlowHash ? fact("Flow version", task.FlowVersion ? `${task.FlowVersion} (${task.FlowHash})` : task.FlowHash) : [],
      cancel ? fact("Cancel", `requested by ${cancel.Actor}: ${cancel.Reason} (`, when(cancel.Time), ")") : [],
      // A failure held the task (on_failure: hold): what failed, and why; the actions decide.
      task.Held ? el("div", { class: "held" }, el("dt", { text: "Held" }), el("dd", {},
        `step ${task.Held.Cursor} (${task.Steps[task.Held.Cursor].Name})` +
        `${task.Held.Item === null || task.Held.Item === undefined ? "" : ` item ${task.Held.Item}`} failed: ` +
        `${task.Held.Message} (`, when(task.Held.Time), "): redrive it or roll it back")) : [],
      // Items that failed within their step's budget, each rolled back on its own.
      task.FailedItems ? el("div", { class: "failed-items" }, el("dt", { text: "Failed items" }), el("dd", {},
        `${task.FailedItems}, within their steps' budgets (`,
        task.Steps.filter((s) => s.FailedItems).map((s) => `${s.Name}: ${s.FailedItems}`).join(", "), ")")) : [],
      // docs/design/operations.md: a pause, a wait for another task, a deadline.
      task.Paused && !task.Held ? el("div", { class: "paused" }, el("dt", { text: "Paused" }), el("dd", {},
        `by ${task.Paused.Actor}: ${task.Paused.Reason} (`, when(task.Paused.Time), ")")) : [],
      task.Deadline ? fact("Deadline", when(task.Deadline), ` (${task.DeadlineSeconds} s)`) : []),
  ];
}

function parameters(task) {
  const entries = Object.entries(task.Parameters);
  if (!entries.length) return el("p", { class: "muted", text: "No parameters." });
  const secret = new Set(task.SecretParameters);
  return el("table", { class: "params" }, el("tbody", {}, entries.map(([key, value]) => {
    const masked = value === MASK || secret.has(key);
    return el("tr", {},
      el("th", { scope: "row", text: key }),
      el("td", {}, masked
        ? [el("span", { class: "secret", text: asText(value) }), el("span", { class: "tag", text: "secret" })]
        : el("pre", { class: "value", text: asText(value) })));
  })));
}

// A wait's words: plain text, a name shown strong, a time in the reader's zone, another task linked.
function waitShown(shown) {
  const word = ({ Kind, Value }) => Kind === "strong" ? el("strong", { text: String(Value ?? "") })
    : Kind === "time" ? when(Value)
    : Kind === "task" ? el("a", { href: hashFor("task", Value), text: String(Value ?? "") })
    : String(Value ?? "");
  return el("div", shown.Style ? { class: shown.Style } : {}, el("dt", { text: "Waiting for" }),
    el("dd", {}, ...shown.Words.map(word)));
}

function rateText(rate) {
  return rate ? `: ${rate.Limit} per ${rate.Per}s` : "";
}

// A lock's mode, named when it is not the default (exclusive): "mode resize".
function lockMode(lock, before, after) {
  return lock && lock.Mode && lock.Mode !== "exclusive" ? `${before}mode ${lock.Mode}${after}` : "";
}
