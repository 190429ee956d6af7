// A task's event history: every event the engine and the operators recorded, oldest first.

import { el, when } from "./dom.js";
import { PHASES } from "./labels.js";

const OPERATOR_EVENTS = new Set(["cancel_requested", "cancelled", "retried", "rollback_retried", "compensated",
  "paused", "resumed", "withdrawn", "operator_skipped", "migrated"]);

export function history(task) {
  const head = el("thead", {}, el("tr", {},
    ["Time", "+", "Event", "Step", "Phase", "Attempt", "Actor", "Message"].map((h) => el("th", { text: h }))));
  const rows = task.History.map((event) => {
    const step = event.Cursor === null ? null : task.Steps[event.Cursor];
    const kind = OPERATOR_EVENTS.has(event.Event) ? "ev-operator"
      : /fail|lost|died|timed/.test(event.Event) ? "ev-bad" : "";
    return el("tr", { class: kind },
      el("td", { class: "time" }, when(event.Time, true)),
      el("td", { class: "num muted", text: offset(event.Time - task.TimeCreate) }),
      el("td", {}, el("span", { class: "event", text: event.Event })),
      el("td", { text: step ? `${event.Cursor} ${step.Name}${itemOf(event)}` : "" }),
      el("td", { text: event.Phase === null ? "" : PHASES[event.Phase] }),
      el("td", { class: "num", text: event.Attempt ?? "" }),
      el("td", { text: event.Actor ?? "" }),
      el("td", { class: "message", text: event.Message }));
  });
  return el("div", { class: "table-fit" }, el("table", { class: "history" }, head, el("tbody", {}, rows)));
}

function offset(seconds) {
  return seconds < 60 ? `${seconds.toFixed(2)} s` : `${(seconds / 60).toFixed(1)} min`;
}

function itemOf(event) {
  return event.Item === null || event.Item === undefined ? "" : ` [item ${event.Item}]`;
}
