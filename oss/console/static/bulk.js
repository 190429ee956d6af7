// Bulk operator actions on the tasks the list's filters select (POST /api/v1/bulk/{action}):
// a dry run first, which counts exactly what the action fits, then the same request applied.
// Each task's history records the operator and the reason. A text search (q) is not a filter
// the bulk API takes: the panel asks for a type, status, owner, label or time instead.

import { call } from "./api.js";
import { el, replace } from "./dom.js";
import { askReason } from "./dialog.js";

const BULK_ACTIONS = ["cancel", "retry", "retry-rollback", "pause", "resume"];

// The list's filters as the bulk API's body; null when none of them is a bulk filter.
export function bulkFilter(params) {
  if (params.failed_items) return null;  // bulk actions select by the other filters only: none here
  const body = {};
  if (params.task_type) body.task_type = params.task_type;
  if (params.status) body.status = params.status;
  if (params.user_id) body.user_id = params.user_id;
  if (params.label && params.label.includes("=")) {
    const at = params.label.indexOf("=");
    body.labels = { [params.label.slice(0, at)]: params.label.slice(at + 1) };
  }
  if (params.created_from) body.created_from = Number(params.created_from);
  if (params.created_to) body.created_to = Number(params.created_to);
  return Object.keys(body).length ? body : null;
}

export function bulkPanel(params, onDone) {
  const filter = bulkFilter(params);
  if (!filter) return el("p", { class: "muted small bulk", text: "Bulk actions: filter by type, status, owner, label or time first." });
  const outcome = el("div", { class: "bulk-outcome", "aria-live": "polite" });
  const select = el("select", { id: "bulk-action", name: "bulk-action" },
    BULK_ACTIONS.map((name) => el("option", { value: name, text: name })));
  const send = async (action, reason, dryRun) => {
    replace(outcome, el("div", { class: "banner info", text: `${action}: ${dryRun ? "counting" : "applying"}…` }));
    try {
      const result = await call("POST", `/bulk/${action}`, { ...filter, reason, dry_run: dryRun });
      const refused = result.refused.length ? `, ${result.refused.length} refused (${result.refused[0].reason})` : "";
      const more = result.truncated ? " (more match than the limit)" : "";
      const verb = dryRun ? "would apply to" : "applied to";
      const line = el("div", { class: `banner ${dryRun ? "info" : "ok"}`, role: "status", dataset: { bulk: dryRun ? "dry" : "applied" },
        text: `${action}: ${result.matched} tasks match${more}; ${verb} ${result.applied.length}${refused}.` });
      const apply = dryRun && result.applied.length
        ? el("button", { type: "button", class: "danger", dataset: { bulkApply: action },
          text: `Apply ${action} to ${result.applied.length} tasks`, onclick: () => send(action, reason, false) })
        : null;
      replace(outcome, line, apply);
      if (!dryRun) onDone();
    } catch (error) {
      replace(outcome, el("div", { class: "banner error", role: "alert",
        text: `${action} refused: ${error.describe ? error.describe() : error}` }));
    }
  };
  const dry = el("button", { type: "button", class: "primary", id: "bulk-dry-run", text: "Dry run…",
    onclick: () => askReason({ title: `Bulk ${select.value}`, confirm: "Count",
      help: "First a dry run: it counts the tasks these filters select and how many the action fits; nothing changes yet.",
      placeholder: "Why? Recorded in every task's history with your name." }, (reason) => send(select.value, reason, true)) });
  return el("section", { class: "bulk" },
    el("label", { class: "field" }, el("span", { text: "Bulk action on these tasks" }), select), dry, outcome);
}
