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
import { actionBar, actionEndpoint, actionLabel } from "./actions.js";
import { timeline } from "./timeline.js";
import { history } from "./history.js";
import { flowGraph } from "./graph.js";
import { itemTables } from "./items.js";

const MASK = "***";

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
  const progress = (event) => {
    const step = shown?.Steps[event.Step];
    if (!step) return;
    step.ItemCounts = event.ItemCounts;
    itemsDue ??= setTimeout(() => { itemsDue = null; drawItems(shown); }, 1000);
  };

  const draw = (task) => {
    if (task.Version === version) return;
    version = task.Version;
    shown = task;
    replace(header, ...summary(task));
    replace(actions, el("h2", { text: "Operator actions" }), actionBar(task, perform));
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

  async function perform(action, reason, extra = {}) {
    replace(outcome, el("div", { class: "banner info", text: `${actionLabel(action)}: sending…` }));
    try {
      const task = await call("POST", `/tasks/${encodeURIComponent(taskId)}/${actionEndpoint(action)}`, { reason, ...extra });
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
      task.WaitingFor && !["freeze", "drain"].includes(task.WaitingFor.Kind) ? fact("Waiting for",
        `${task.WaitingFor.Kind} ${task.WaitingFor.Key ?? task.WaitingFor.TaskId ?? ""}` +
        `${task.WaitingFor.Kind === "lock" ? lockMode(task.Lock, " (", ")") : ""} since `, when(task.WaitingFor.Since)) : [],
      // A freeze window the task was created in: it starts once the window ends (the sweeper lets it go).
      task.WaitingFor?.Kind === "freeze" ? el("div", { class: "frozen" }, el("dt", { text: "Waiting for" }), el("dd", {},
        "freeze window ", el("strong", { text: task.WaitingFor.Key }), " to end at ", when(task.WaitingFor.Until))) : [],
      // A step held by a drained module (a deploy): it goes once an operator undrains the module.
      task.WaitingFor?.Kind === "drain" ? el("div", { class: "drained" }, el("dt", { text: "Waiting for" }), el("dd", {},
        "module ", el("strong", { text: task.WaitingFor.Key }), " to be undrained (drained since ",
        when(task.WaitingFor.Since), ")")) : [],
      task.Lock ? fact("Lock", `${task.Lock.Key} (${lockMode(task.Lock, "", ", ")}limit ${task.Lock.Limit}): ${task.Lock.State}` +
        (task.Lock.State === "kept" ? ", held until an operator ends the task" : "")) : [],
      fact("Created", when(task.TimeCreate)),
      fact("Started", when(task.TimeStart)),
      fact("Ended", when(task.TimeEnd)),
      fact("Took", duration(task.TimeStart, task.TimeEnd, FINAL.has(task.TaskStatus)) || "—"),
      fact("Step", `${task.TaskCursor + 1} of ${task.Steps.length} reached`),
      // A retry runs the flow again as a new generation; the history keeps every run's events.
      task.Generation ? fact("Run", `${task.Generation + 1} (retried ${task.Generation}×)`) : [],
      task.IdempotencyKey ? fact("Idempotency key", task.IdempotencyKey) : [],
      // The revision of its task type it runs (`baton flows diff` tells revisions apart).
      task.FlowHash ? fact("Flow version", task.FlowVersion ? `${task.FlowVersion} (${task.FlowHash})` : task.FlowHash) : [],
      cancel ? fact("Cancel", `requested by ${cancel.Actor}: ${cancel.Reason} (`, when(cancel.Time), ")") : [],
      // DESIGN.md sec. 10: a pause, a wait for another task, a deadline.
      task.Paused ? el("div", { class: "paused" }, el("dt", { text: "Paused" }), el("dd", {},
        `by ${task.Paused.Actor}: ${task.Paused.Reason} (`, when(task.Paused.Time), ")")) : [],
      task.WaitingFor?.Kind === "task" ? fact("Waiting for", "task ",
        el("a", { href: hashFor("task", task.WaitingFor.TaskId), text: task.WaitingFor.TaskId }), " to succeed") : [],
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

// A lock's mode, named when it is not the default (exclusive): "mode resize".
function lockMode(lock, before, after) {
  return lock && lock.Mode && lock.Mode !== "exclusive" ? `${before}mode ${lock.Mode}${after}` : "";
}
